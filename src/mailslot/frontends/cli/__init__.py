"""The ``mailslot`` command line: its commands, completion and plain-text views."""
