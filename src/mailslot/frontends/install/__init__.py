"""``mailslot install HOST``: register mailslot with an agent host, in one command.

Writes or merges the host's MCP settings (and with ``--hooks`` its hook settings) so the
host starts ``ABSOLUTE/mailslot serve --agent NAME`` and runs ``ABSOLUTE/mailslot hook
HOST EVENT --agent NAME``. Only our entries change; a second run changes nothing; a file
that does not parse is an error and stays untouched; ``--dry-run`` shows the diff.
Where each host reads its settings, and in which shape, is the host's own
(:mod:`mailslot.host_registry`); docs/hosts.md says it for people.

``install --undo HOST`` takes back exactly what install did, from the record install keeps
of it (:mod:`.record`, :mod:`.undoing`). Nothing in a
project is read or written through a link, a FIFO or another user's file.

The code that edits files is in :mod:`mailslot.frontends.install.changes`, imported when run.
"""
