"""``mailslot install HOST``: register mailslot with an agent host, in one command.

Writes or merges the host's MCP settings (and with ``--hooks`` its hook settings) so the
host starts ``ABSOLUTE/mailslot serve --agent NAME`` and runs ``ABSOLUTE/mailslot hook
HOST EVENT --agent NAME``. Only our entries change; a second run changes nothing; a file
that does not parse is an error and stays untouched; ``--dry-run`` shows the diff.
Where each host reads its settings, and in which shape, is the host's own
(:mod:`mailslot.host_registry`); docs/hosts.md says it for people.

An install is a plan of steps (:mod:`.planning`, :mod:`.steps`): each settings file, and
the agent's settings in the mailbox's config.json, is a step that says what it reads,
what it would write (``--dry-run``) and how its undo takes it back. Every step is
checked before any is written; each keeps its undo in the record install keeps
(:mod:`.record`) before it is written; and ``install --undo HOST`` takes the recorded
steps back in reverse (:mod:`.undoing`), so it takes back exactly what install did.
Nothing in a project is read or written through a link, a FIFO or another user's file.

The code is imported when ``install`` runs (:mod:`.changes`), never by another command.
"""
