"""The ``mailslot`` command's argparse parser: help, usage errors and every command line
:mod:`.plain_parse` leaves to it. Imported only then (argparse loads ``re``, ``enum``
and ``gettext``: a quarter of a short command's start)."""

from __future__ import annotations

import argparse
import os
import sys

from ...core import __version__
from .command import (
    AGENT_HELP,
    SERVER_AGENT_HELP,
    Command,
    declared,
    fail,
    global_options,
    remote_option,
)

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from typing import Any, NoReturn

# The CLI speaks English throughout, so argparse's few words of its own ("usage:",
# "options") are not looked up in the system's message catalogues: every look-up loaded
# `locale` and searched the disk, a visible part of a short command's start.
argparse._ = str  # type: ignore[attr-defined]

_JSON_ASKED = False
"""Whether usage errors are printed as JSON (``--json`` on the line being parsed)."""


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
    """argparse, but a usage error is one line on stderr (JSON with --json) and exit 2.
    ``helped``: the help it points at (the command's, when the line names one)."""

    helped = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        fail(f"{message} (see '{self.helped or self.prog} --help')", "usage", 2,
             as_json=_JSON_ASKED)
        raise SystemExit(2)


def build_parser(only: str | None = None, *, as_json: bool = False) -> _Parser:
    """The whole parser, or with ``only`` one that knows just that command: building
    every command's parser was a tenth of a short command's whole time. ``as_json``:
    its usage errors are printed as JSON."""
    global _JSON_ASKED
    _JSON_ASKED = as_json
    parser = _Parser(prog="mailslot", description="A local mailbox for AI coding agents.",
                     epilog="Run 'mailslot COMMAND --help' for a command's options and "
                            "examples. Message ids may be shortened to their random tail "
                            "or any unique prefix of 6+ characters.")
    parser.add_argument("--version", action="version", version=f"mailslot {__version__}")
    global_options(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for command in declared(only):
        _add(sub, command)
    if only is not None:  # an unknown option is found by the top parser: its command's help
        parser.helped = f"mailslot {only}"
    return parser


def _add(sub: argparse._SubParsersAction[_Parser], command: Command) -> None:
    """One command's parser: its help and examples, the global options, its own."""
    examples = "\n".join(f"  {e}" for e in command.examples)
    p = sub.add_parser(command.name, help=command.help, description=command.help,
                       epilog=f"examples:\n{examples}" if examples else None,
                       formatter_class=_raw_formatter)
    global_options(p, top=False,
                   agent_help=SERVER_AGENT_HELP if command.server else AGENT_HELP)
    command.add_arguments(p)
    if command.remote:
        remote_option(p)
