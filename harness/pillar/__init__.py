"""Pillars stored in PostgreSQL: the data model, the store, a synthetic fleet
generator, the file-tree format and the migration from file pillars."""
