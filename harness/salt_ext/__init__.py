"""Salt modules the harness adds to its master (loaded through ``engines_dirs``)."""
