"""The ``mailslot`` command: parse, call the service once, print.

Exit codes: 0 ok; 1 the operation failed (no such message, a refused action, an unusable
mailbox); 2 bad input or usage. Either way one line ``mailslot: error: ...`` on stderr
(with ``--json``, ``{"error": ..., "code": ...}``), nothing written. This module holds
the parser's root (the global options), runs the one command asked for and translates
its errors; no rule lives here. Each command is declared in its feature's module
(:mod:`.command` says how), and only that module is imported to run it. Heavy modules
(the MCP SDK, pydantic, starlette, watchdog) are imported only inside the handlers of
``serve``, ``watch`` and ``web``, when they run.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from .. import __version__
from ..core import jsontext
from ..core.errors import InvalidInput, MailslotError, NoIdentity, NotFound, Refused
from ..core.names import closest
from ..service.mailbox import Mailbox
from .command import COMMAND_NAMES, HELP_ORDER, Command, remote_option

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, NoReturn

# The CLI speaks English throughout, so argparse's few words of its own ("usage:",
# "options") are not looked up in the system's message catalogues: every look-up loaded
# `locale` and searched the disk, a visible part of a short command's start.
argparse._ = str  # type: ignore[attr-defined]


def declared(only: str | None = None) -> list[Command]:
    """Every command's declaration in :data:`~.command.HELP_ORDER`, or just the one named
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


def _columns() -> int:
    """The terminal's width, as ``shutil.get_terminal_size`` tells it to argparse (which
    would import ``shutil``, and with it three compression modules, on every command)."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def _formatter(*, prog: str) -> argparse.HelpFormatter:
    return argparse.HelpFormatter(prog, width=_columns() - 2)


def _raw_formatter(*, prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, width=_columns() - 2)


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (JSON with --json) and exit 2."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        _fail(f"{message} (see '{self.prog} --help')", "usage", 2, as_json=_JSON_ASKED)
        raise SystemExit(2)


_JSON_ASKED = "--json" in sys.argv[1:]
"""Whether errors before parsing finishes (usage errors) are printed as JSON."""

_CODES: list[tuple[type[MailslotError], str]] = [
    (NoIdentity, "no_identity"), (InvalidInput, "invalid_input"), (NotFound, "not_found"),
    (Refused, "refused"), (MailslotError, "failed"),
]


def _fail(message: str, code: str, exit_code: int, *, as_json: bool) -> int:
    """The one shape of every error: a line, or with --json an object, on stderr."""
    if as_json:
        line = jsontext.dumps({"error": message, "code": code, "exit": exit_code},
                              ascii=False)
    else:
        line = f"mailslot: error: {message}"
    print(line, file=sys.stderr)
    return exit_code


# Parser ---------------------------------------------------------------------------
_AGENT_HELP = "who this process speaks as (default: $MAILSLOT_AGENT, then the git toplevel's name)"
_SERVER_AGENT_HELP = ("who the server (or what install registers) speaks as: required, here "
                      "or as $MAILSLOT_AGENT (the git checkout's name is not used)")


def _globals(parser: argparse.ArgumentParser, *, top: bool, agent_help: str = _AGENT_HELP
             ) -> None:
    """--dir, --agent, --credential, --json and --no-color, before or after the command.

    On the top parser they hold the defaults; on a command's parser they are set only when
    given (``SUPPRESS``), so a value given before the command is not reset after it.
    """
    def default(value: object) -> object:
        return value if top else argparse.SUPPRESS

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


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser, or with ``only`` one that knows just that command: building
    every command's parser was a tenth of a short command's whole time."""
    parser = _Parser(prog="mailslot", description="A local mailbox for AI coding agents.",
                     epilog="Run 'mailslot COMMAND --help' for a command's options and "
                            "examples. Message ids may be shortened to their random tail "
                            "or any unique prefix of 6+ characters.")
    parser.add_argument("--version", action="version", version=f"mailslot {__version__}")
    _globals(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for command in declared(only):
        _add(sub, command)
    return parser


def _add(sub: argparse._SubParsersAction[_Parser], command: Command) -> None:
    """One command's parser: its help and examples, the global options, its own."""
    examples = "\n".join(f"  {e}" for e in command.examples)
    p = sub.add_parser(command.name, help=command.help, description=command.help,
                       epilog=f"examples:\n{examples}" if examples else None,
                       formatter_class=_raw_formatter)
    _globals(p, top=False, agent_help=_SERVER_AGENT_HELP if command.server else _AGENT_HELP)
    command.add_arguments(p)
    if command.remote:
        remote_option(p)


def command_word(argv: Sequence[str]) -> str | None:
    """The command the line names, if it can be told before parsing: the first word
    that is not an option or an option's value, with no help asked for before it."""
    words = iter(argv)
    for word in words:
        if word in ("-h", "--help", "--version"):
            return None
        if word in ("--dir", "--store", "--agent", "--credential"):
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def _mistyped(word: str | None) -> str | None:
    """'did you mean' for a command word that is no command; ``None`` when it is one."""
    if word is None or word in COMMAND_NAMES:
        return None
    near = closest(word, COMMAND_NAMES)
    hint = f": did you mean {near}?" if near else ""
    return f"unknown command {word!r}{hint} (see 'mailslot --help')"


# Running one command --------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    global _JSON_ASKED
    _JSON_ASKED = "--json" in argv
    word = command_word(argv)
    parser = build_parser(only=word)
    if not argv:
        parser.print_help()  # `mailslot` alone: show what it can do
        return 2
    typo = _mistyped(word)
    if typo is not None:
        return _fail(typo, "usage", 2, as_json=_JSON_ASKED)
    args = parser.parse_args(argv)
    [command] = declared(args.command)
    if command.bare is not None:  # it must never fail its caller: no translation
        return command.bare(args)
    try:
        remote = getattr(args, "remote", None)  # the credential is the server's
        box = Mailbox.open(args.dir, args.agent,
                           credential=None if remote else args.credential,
                           peer_of=getattr(args, "peer_of", None))
        return _run(command, args, box)
    except MailslotError as exc:
        code = next(c for kind, c in _CODES if isinstance(exc, kind))
        return _fail(str(exc), code, 2 if isinstance(exc, InvalidInput) else 1,
                     as_json=args.json)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


def _run(command: Command, args: argparse.Namespace, box: Mailbox) -> int:
    """The command's handler, or with ``--remote URL`` the same command against a
    ``serve --http`` server."""
    if command.remote and args.remote is not None:
        from . import remote_cli

        return remote_cli.run(command.name, args)
    if command.run is None:
        raise AssertionError(f"{command.name} has no handler")
    return command.run(args, box)


if __name__ == "__main__":
    sys.exit(main())
