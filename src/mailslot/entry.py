"""The ``mailslot`` console script.

``mailslot hook HOST EVENT`` runs at every session start and prompt of every agent, so
it starts without loading the rest of mailslot (argparse, the service, YAML): a command
line of exactly that shape goes straight to :mod:`mailslot.frontends.hooks.hook_entry`.
Everything else, including any ``hook`` command line this does not recognise, goes to
:mod:`mailslot.frontends.cli.main`, whose ``hook`` subcommand does the same.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import NoReturn

SKIP_TEARDOWN = frozenset({
    "hook", "send", "reply", "broadcast", "retract", "read", "mark-read", "done",
    "inbox", "sent", "status", "who", "whoami", "completion",
})
"""The commands that end with ``os._exit`` (after flushing stdout and stderr) instead of
the interpreter's teardown of the modules they loaded, which was a tenth of a hook's time
and of a short command's start-up. Each is safe because everything it writes is done
before it returns: a message, a move between folders, a seen set, a receipt, the hook
session's record and a wake or notifier queue entry are each written to a staged file,
synced, renamed into place and the folder synced, by the store's own calls, and each
file is closed there; the rest is text on the standard streams, flushed at the end.
None starts a thread, keeps a SQLite handle (the search index is left a marker file) or
a server running. Every other command (serve, watch, web, start, install, config,
search, backup, ...) ends through the interpreter, and so does any command once
``psycopg`` is loaded (a PostgreSQL connection is closed politely, not cut).
tests/test_entry.py runs each of these as a real process and checks its writes."""

_GLOBAL = ("--dir", "--store", "--agent")
_FLAGS = ("--json", "--no-color")  # global flags a hook has no use for (it prints host JSON)


def hook_command(argv: Sequence[str]) -> tuple[str, str, dict[str, str]] | None:
    """``(HOST, EVENT, {"dir": .., "agent": ..})`` for ``[--dir D] [--agent A] hook HOST
    EVENT`` (options before or after, ``--opt=value`` too, ``--json``/``--no-color``
    accepted and ignored); ``None`` for anything else."""
    options: dict[str, str] = {}
    words: list[str] = []
    args = iter(argv)
    for arg in args:
        name, equals, value = arg.partition("=")
        if name in _GLOBAL:
            if not equals:
                value = next(args, "")
            if not value or value.startswith("-"):
                return None
            options[name[2:]] = value
        elif arg in _FLAGS:
            continue
        elif arg.startswith("-"):
            return None
        else:
            words.append(arg)
    if len(words) != 3 or words[0] != "hook":
        return None
    return words[1], words[2], options


def main() -> int:
    args = sys.argv[1:]
    hook = hook_command(args)
    if hook is not None:
        from .frontends.hooks.hook_entry import run_hook

        host, event, options = hook
        root = options.get("dir") or options.get("store")
        return _end("hook", run_hook(host, event, agent=options.get("agent"), root=root))
    from .frontends.cli.main import command_word
    from .frontends.cli.main import main as cli_main

    return _end(command_word(args), cli_main(args))


def _end(command: str | None, code: int) -> int:
    """``code``, returned for the interpreter's normal exit, unless ``command`` is one
    of :data:`SKIP_TEARDOWN` and no PostgreSQL connection is open: then the process
    ends here."""
    if command in SKIP_TEARDOWN and "psycopg" not in sys.modules:
        _skip_teardown(code)
    return code


def _skip_teardown(code: int) -> NoReturn:
    """Flush the standard streams (the only buffers a listed command leaves) and end
    the process without the interpreter's teardown."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            continue
    os._exit(code)
