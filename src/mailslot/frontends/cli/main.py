"""The ``mailslot`` command: parse, call the service once, print.

Exit codes: 0 ok; 1 the operation failed (no such message, a refused action, an unusable
mailbox); 2 bad input or usage. Either way one line ``mailslot: error: ...`` on stderr
(with ``--json``, ``{"error": ..., "code": ...}``), nothing written. This module runs
the one command asked for and translates its errors; no rule lives here. Each command is
declared in its feature's module (:mod:`.command` says how), and only that module is
imported to run it. A well-formed line is parsed by :mod:`.plain_parse`; help, errors
and anything else it does not take go to argparse (:mod:`.parser`), which is then the
only one to load it. Heavy modules (the MCP SDK, pydantic, starlette, watchdog) are
imported only inside the handlers of ``serve``, ``watch`` and ``web``, when they run.
"""

from __future__ import annotations

import sys

from ...core.errors import InvalidInput, MailslotError, NoIdentity, NotFound, Refused
from ...core.names import closest
from ...service.mailbox import Mailbox
from .command import COMMAND_NAMES, Command, declared, fail
from .plain_parse import parse_plain

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

_CODES: list[tuple[type[MailslotError], str]] = [
    (NoIdentity, "no_identity"), (InvalidInput, "invalid_input"), (NotFound, "not_found"),
    (Refused, "refused"), (MailslotError, "failed"),
]


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
    as_json = "--json" in argv  # for errors before parsing finishes (usage errors)
    word = command_word(argv)
    typo = _mistyped(word) if argv else None
    if typo is not None:
        return fail(typo, "usage", 2, as_json=as_json)
    found = declared(word) if word is not None else []
    args = parse_plain(argv, found[0]) if found else None
    if args is None:
        from .parser import build_parser

        parser = build_parser(only=word, as_json=as_json)
        if not argv:
            parser.print_help()  # `mailslot` alone: show what it can do
            return 2
        if found and found[0].bare is not None:  # `hook`: never blocks a prompt
            args, extra = parser.parse_known_args(argv)
            if extra:
                print(f"mailslot {word}: ignored unknown argument(s): {' '.join(extra)}",
                      file=sys.stderr)
        else:
            args = parser.parse_args(argv)
    [command] = declared(args.command)
    if command.bare is not None:  # it must never fail its caller: no translation
        return command.bare(args)
    try:
        remote = getattr(args, "remote", None)  # the credential is the server's
        box = Mailbox.open(_location(args), args.agent,
                           credential=None if remote else args.credential,
                           peer_of=getattr(args, "peer_of", None))
        if command.needs_mailbox(args):
            box.require_mailbox()
        return _run(command, args, box)
    except MailslotError as exc:
        code = next(c for kind, c in _CODES if isinstance(exc, kind))
        return fail(str(exc), code, 2 if isinstance(exc, InvalidInput) else 1,
                     as_json=args.json)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


def _location(args: argparse.Namespace) -> str | None:
    """``--dir``/``--store``, or the folder or URL a command takes as its own word
    (``init DIR|URL``): one of the two, or both the same."""
    own = getattr(args, "location", None)
    if own is not None and args.dir is not None and own != args.dir:
        raise InvalidInput(f"{own} and --dir {args.dir} name two mailboxes: give one")
    return own if own is not None else args.dir  # type: ignore[no-any-return]


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
