"""master_tops modules of the extension, found by Salt's loader."""
