"""Master engines of the extension, found by Salt's loader."""
