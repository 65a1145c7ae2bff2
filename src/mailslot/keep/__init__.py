"""Keeping mail: backup and restore, export, import from other mailboxes, migration,
encryption and search."""
