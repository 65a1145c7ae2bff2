"""The bottom layer: values, errors, ids, names, text rules, the message format and the
config reader. Nothing here imports any other part of mailslot."""

__version__ = "0.6.0"
"""mailslot's version: ``mailslot --version``, the package metadata (pyproject.toml reads
it here) and CHANGELOG.md's newest release."""
