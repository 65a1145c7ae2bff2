"""One reader per foreign mailbox format; each module's ``open_source(fmt, path,
report)`` gives a :class:`mailslot.keep.importing.Source`. The rules every format shares,
and the choice of module for a format, are in :mod:`mailslot.keep.importing`; each
format's mapping is in its module's docstring and in docs/keep.md."""
