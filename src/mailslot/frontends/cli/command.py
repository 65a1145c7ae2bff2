"""How a ``mailslot`` command is declared, and what every command's handler shares.

A command is a :class:`Command` value in its feature's module (``mail_commands``,
``agent_commands``, ``keep_commands``, ``admin_commands``, ``run_commands``,
``peer_commands``): its name,
help and examples, then its options (``@cmd.arguments``) and its handler
(``@cmd.handler``), one after the other. ``cli.main`` builds the parser from them and
runs the handler; a handler parses nothing and translates no error: it calls the service
once and prints. Nothing heavy is imported here: every command loads this module.
"""

from __future__ import annotations

import importlib
import os
import sys

from ...core import jsontext
from . import render

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence
    from typing import Any

    from ...service.mailbox import Mailbox

    Handler = Callable[[argparse.Namespace, Mailbox], int]
    Bare = Callable[[argparse.Namespace], int]
    Arguments = Callable[[argparse.ArgumentParser], None]

HELP_ORDER: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("mail_commands", ("send", "inbox", "sent", "read", "mark-read", "done", "reply",
                       "broadcast", "retract", "status", "stats")),
    ("agent_commands", ("who", "whoami", "agent", "pause", "resume")),
    ("admin_commands", ("doctor",)),
    ("run_commands", ("serve", "install", "hook", "watch", "bridge", "relay", "completion",
                      "web", "sidecar")),
    ("agent_commands", ("join", "admit", "refuse", "revoke", "pending", "sessions", "gate")),
    ("admin_commands", ("init",)),
    ("keep_commands", ("migrate",)),
    ("admin_commands", ("config", "pg")),
    ("peer_commands", ("peer",)),
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


def declared(only: str | None = None) -> list[Command]:
    """Every command's declaration in :data:`HELP_ORDER`, or just the one named
    ``only`` (none if it is no command). Only the modules declaring them are imported: a
    command loads its own module, not the others'."""
    modules = {m: importlib.import_module(f"{__package__}.{m}").COMMANDS
               for m, names in HELP_ORDER if only is None or only in names}
    by_name: dict[str, Command] = {c.name: c for found in modules.values() for c in found}
    if only is not None:
        return [by_name[only]] if only in by_name else []
    for module, found in modules.items():  # the whole list: each module holds its own
        listed = sorted(name for m, names in HELP_ORDER if m == module for name in names)
        if sorted(c.name for c in found) != listed:
            raise AssertionError(f"{module}.COMMANDS is not what HELP_ORDER names for it")
    return [by_name[name] for name in COMMAND_NAMES]


def fail(message: str, code: str, exit_code: int, *, as_json: bool) -> int:
    """The one shape of every error: a line, or with --json an object, on stderr."""
    if as_json:
        line = jsontext.dumps({"error": message, "code": code, "exit": exit_code},
                              ascii=False)
    else:
        line = f"mailslot: error: {message}"
    print(line, file=sys.stderr)
    return exit_code


def _no_arguments(parser: argparse.ArgumentParser) -> None:
    return None


class Command:
    """One command: what ``mailslot COMMAND --help`` shows, its options and its handler.

    ``server``: its ``--agent`` help says the name must be given (no git default), as
    for ``serve`` and ``install`` (their handlers refuse without one).
    ``remote``: it takes ``--remote URL`` and then runs against ``serve --http``
    (:mod:`.remote_cli`) instead of the local handler.
    ``existing``: it only reads, checks or acts on what a mailbox already holds (true, or
    a function of the parsed options for a command that also writes), so on a folder or
    database holding no mailbox (a mistyped ``--dir``) it says so in one line and
    creates nothing; a command that may be the first write to a new mailbox (a send,
    ``init``) leaves it false.
    A handler gets the parsed options and the opened :class:`Mailbox`; its errors are
    translated into one line and an exit code. A ``bare`` handler (``hook``) gets only
    the options: no mailbox is opened and nothing is translated, since it must never
    fail its caller.
    """

    __slots__ = ("_examples", "_existing", "add_arguments", "bare", "help", "name", "remote",
                 "run", "server")

    def __init__(self, name: str, help: str, *,
                 examples: Sequence[str] | Callable[[], Sequence[str]] = (),
                 server: bool = False, remote: bool = False,
                 existing: bool | Callable[[argparse.Namespace], bool] = False) -> None:
        self.name = name
        self.help = help
        self._examples = examples
        self.server = server
        self.remote = remote
        self._existing = existing
        self.add_arguments: Arguments = _no_arguments
        self.run: Handler | None = None
        self.bare: Bare | None = None

    @property
    def examples(self) -> tuple[str, ...]:
        """The examples its ``--help`` shows (a callable is asked only then: examples
        built from the host registry load it only when help is built)."""
        found = self._examples() if callable(self._examples) else self._examples
        return tuple(found)

    def needs_mailbox(self, args: argparse.Namespace) -> bool:
        """Does this line only read, check or act on an existing mailbox (``existing``)?
        Not against ``--remote``: the server's mailbox is the server's to check."""
        if getattr(args, "remote", None) is not None:
            return False
        return self._existing(args) if callable(self._existing) else self._existing

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
AGENT_HELP = "who this process speaks as (default: $MAILSLOT_AGENT, then the git toplevel's name)"
SERVER_AGENT_HELP = ("who the server (or what install registers) speaks as: required, here "
                     "or as $MAILSLOT_AGENT (the git checkout's name is not used)")


def global_options(parser: argparse.ArgumentParser, *, top: bool,
                   agent_help: str = AGENT_HELP) -> None:
    """--dir, --agent, --credential, --json and --no-color, before or after the command.

    On the top parser they hold the defaults; on a command's parser they are set only when
    given (``SUPPRESS``), so a value given before the command is not reset after it.
    """
    def default(value: object) -> object:
        if top:
            return value
        import argparse  # only a command's own argparse parser has these

        return argparse.SUPPRESS

    group = parser.add_argument_group("global options (before or after the command)")
    group.add_argument("--dir", "--store", default=default(None), metavar="DIR|URL",
                       help="mailbox folder or postgresql:// URL (default: $MAILSLOT_STORE, "
                            "then $MAILSLOT_DIR, then ~/mailslot)")
    group.add_argument("--agent", default=default(None), metavar="NAME", help=agent_help)
    group.add_argument("--credential", default=default(None), metavar="FILE",
                       help="speak as the registered agent this credential file names "
                            "(default: $MAILSLOT_CREDENTIAL); with --remote, the file "
                            "holding the secret (default: $MAILSLOT_SECRET)")
    group.add_argument("--json", action="store_true", default=default(False),
                       help="print JSON (results on stdout, errors on stderr)")
    group.add_argument("--no-color", action="store_true", default=default(False),
                       help="no colour even on a terminal (NO_COLOR does the same)")


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
