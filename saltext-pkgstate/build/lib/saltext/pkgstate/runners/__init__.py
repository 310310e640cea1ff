"""Runner modules of the extension (``salt-run pkgstate.*``), found by Salt's loader."""
