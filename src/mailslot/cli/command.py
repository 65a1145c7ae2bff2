"""How a ``mailslot`` command is declared, and what every command's handler shares.

A command is a :class:`Command` value in its feature's module (``mail_commands``,
``agent_commands``, ``keep_commands``, ``admin_commands``, ``run_commands``): its name,
help and examples, then its options (``@cmd.arguments``) and its handler
(``@cmd.handler``), one after the other. ``cli.main`` builds the parser from them and
runs the handler; a handler parses nothing and translates no error: it calls the service
once and prints. Nothing heavy is imported here: every command loads this module.
"""

from __future__ import annotations

import os
import sys

from . import render

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence
    from typing import Any

    from ..service.mailbox import Mailbox

    Handler = Callable[[argparse.Namespace, Mailbox], int]
    Bare = Callable[[argparse.Namespace], int]
    Arguments = Callable[[argparse.ArgumentParser], None]

HELP_ORDER: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("mail_commands", ("send", "inbox", "sent", "read", "mark-read", "done", "reply",
                       "broadcast", "retract", "status")),
    ("agent_commands", ("who", "whoami", "agent", "pause", "resume")),
    ("admin_commands", ("doctor",)),
    ("run_commands", ("serve", "install", "hook", "watch", "bridge", "completion", "web",
                      "sidecar")),
    ("agent_commands", ("join", "admit", "refuse", "revoke", "pending", "sessions", "gate")),
    ("admin_commands", ("init",)),
    ("keep_commands", ("migrate",)),
    ("admin_commands", ("config", "pg")),
    ("run_commands", ("start",)),
    ("keep_commands", ("search", "thread", "index", "archive", "export", "backup",
                       "restore", "import")),
)
"""Every command, in the order ``mailslot --help`` lists them and the completion scripts
offer them, with the module of this package that declares it (in its ``COMMANDS``): a
command runs with only its own module imported. A new command is declared in its
feature's module and named here."""

COMMAND_NAMES = [name for _, names in HELP_ORDER for name in names]
"""Every command's name, in :data:`HELP_ORDER`."""


def _no_arguments(parser: argparse.ArgumentParser) -> None:
    return None


class Command:
    """One command: what ``mailslot COMMAND --help`` shows, its options and its handler.

    ``server``: its ``--agent`` help says the name must be given (no git default), as
    for ``serve`` and ``install`` (their handlers refuse without one).
    ``remote``: it takes ``--remote URL`` and then runs against ``serve --http``
    (:mod:`.remote_cli`) instead of the local handler.
    A handler gets the parsed options and the opened :class:`Mailbox`; its errors are
    translated into one line and an exit code. A ``bare`` handler (``hook``) gets only
    the options: no mailbox is opened and nothing is translated, since it must never
    fail its caller.
    """

    __slots__ = ("_examples", "add_arguments", "bare", "help", "name", "remote", "run",
                 "server")

    def __init__(self, name: str, help: str, *,
                 examples: Sequence[str] | Callable[[], Sequence[str]] = (),
                 server: bool = False, remote: bool = False) -> None:
        self.name = name
        self.help = help
        self._examples = examples
        self.server = server
        self.remote = remote
        self.add_arguments: Arguments = _no_arguments
        self.run: Handler | None = None
        self.bare: Bare | None = None

    @property
    def examples(self) -> tuple[str, ...]:
        """The examples its ``--help`` shows (a callable is asked only then: examples
        built from the host registry load it only when help is built)."""
        found = self._examples() if callable(self._examples) else self._examples
        return tuple(found)

    def arguments(self, add: Arguments) -> Arguments:
        """Decorator: the function that adds this command's options to its parser."""
        self.add_arguments = add
        return add

    def handler(self, run: Handler) -> Handler:
        """Decorator: the function that runs the command."""
        self.run = run
        return run

    def bare_handler(self, run: Bare) -> Bare:
        """Decorator: a handler that opens no mailbox and whose errors are its own."""
        self.bare = run
        return run


# Options more than one command takes ---------------------------------------------
def limit_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--limit", type=int, default=20, help="page size (default 20)")


def remote_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--remote", metavar="URL",
                   help="run against a 'mailslot serve --http' server at URL (see "
                        "docs/remote.md); the identity is the credential's")


# What handlers print -----------------------------------------------------------
def emit(args: argparse.Namespace, data: Any, text: str) -> None:
    """The result: ``data`` as JSON with ``--json``, else ``text`` (if any)."""
    if getattr(args, "json", False):
        import json  # here: a command without --json never loads it

        print(json.dumps(data, ensure_ascii=False, indent=2))
    elif text:
        print(text)


def style(args: argparse.Namespace) -> render.Style:
    """Colour only on a terminal, and never with NO_COLOR or --no-color."""
    wanted = (not args.no_color and not os.environ.get("NO_COLOR")
              and sys.stdout.isatty() and os.environ.get("TERM") != "dumb")
    return render.Style(colour=wanted)
