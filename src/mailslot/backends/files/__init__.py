"""The embedded file store: a Maildir-style folder of Markdown files (docs/format.md)."""
