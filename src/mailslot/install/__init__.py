"""``mailslot install HOST``: register mailslot with an agent host, in one command.

Writes or merges the host's MCP settings (and with ``--hooks`` its hook settings) so the
host starts ``ABSOLUTE/mailslot serve --agent NAME`` and runs ``ABSOLUTE/mailslot hook
HOST EVENT --agent NAME``. Only our entries change; a second run changes nothing; a file
that does not parse is an error and stays untouched; ``--dry-run`` shows the diff.
Hosts, paths and shapes: :mod:`mailslot.install.host_settings` and docs/hosts.md.

Only the host table is imported with the package (the CLI builds its parser from it);
the code that edits files is in :mod:`mailslot.install.changes`, imported when run.
"""

from .host_settings import HOST_NAMES, HOSTS, SCOPES

__all__ = ["HOSTS", "HOST_NAMES", "SCOPES"]
