"""External pillar modules of the extension, found by Salt's loader."""
