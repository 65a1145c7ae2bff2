"""The ``mailslot`` console script.

``mailslot hook HOST EVENT`` runs at every session start and prompt of every agent, so
it starts without loading the rest of mailslot (argparse, the service, YAML): a command
line of exactly that shape goes straight to :mod:`mailslot.hooks.run`. Everything else,
including any ``hook`` command line this does not recognise, goes to :mod:`mailslot.cli`,
whose ``hook`` subcommand does the same.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import NoReturn

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
        from .hooks.run import run_hook

        host, event, options = hook
        root = options.get("dir") or options.get("store")
        _end(run_hook(host, event, agent=options.get("agent"), root=root))
    from .cli import main as cli_main

    code = cli_main(args)
    if "psycopg" not in sys.modules:  # a PostgreSQL connection is closed politely instead
        _end(code)
    return code


def _end(code: int) -> NoReturn:
    """Flush and end the process without the interpreter's teardown of the modules it
    loaded: that teardown was a tenth of a hook's time and of a short command's
    start-up. Safe because a command has written, closed and, where it matters,
    synced every file before it returns; only the standard streams are still buffered."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            continue
    os._exit(code)
