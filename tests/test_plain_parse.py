"""The plain command-line parser gives a handler exactly what argparse would, and leaves
every other line (help, errors, abbreviations, short options) to argparse."""

from __future__ import annotations

import pytest

from mailslot.frontends.cli.command import COMMAND_NAMES, declared
from mailslot.frontends.cli.main import command_word
from mailslot.frontends.cli.parser import build_parser
from mailslot.frontends.cli.plain_parse import parse_plain

PLAIN = [
    ["inbox"],
    ["--agent", "a", "inbox"],
    ["--dir", "/tmp/x", "--agent=a", "inbox", "--limit", "5", "--page=2", "--unread"],
    ["inbox", "--for", "all", "--json", "--agent", "b", "--no-color"],
    ["--agent", "a", "inbox", "--agent", "b"],  # the later one wins, as in argparse
    ["--store", "postgresql://h/db", "who", "--online"],
    ["who"],
    ["doctor"],
    ["doctor", "--deep", "--wake", "r", "--host", "h"],
    ["--agent", "a", "send", "--to", "b", "--to=c", "--subject", "s", "--body", "",
     "--wake", "--new"],
    ["send", "--to", "b", "--subject", "two words", "--body=x=y"],
    ["read", "2026-01-01_000000.000000_a_to_b_7f3a9c", "--peek"],
    ["--json", "status", "7f3a9c", "--timeout", "2.5"],
    ["reply", "7f3a9c", "--body", "ok"],
    ["sent", "--limit", "3"],
    ["whoami"],
]
"""Lines the plain parser takes itself."""

LEFT_TO_ARGPARSE = [
    [], ["--help"], ["inbox", "--help"], ["-h"], ["--version"], ["inbox", "-h"],
    ["inbox", "--lim", "5"],  # an abbreviation
    ["inbox", "--limit", "five"], ["inbox", "--limit"], ["inbox", "--limit", "-5"],
    ["inbox", "--unread=yes"], ["inbox", "extra"], ["inbox", "--nosuch"],
    ["--limit", "5", "inbox"],  # a command's option before the command
    ["send", "--to", "b"],  # --subject is required
    ["read"], ["read", "a", "b"], ["read", "-"], ["inbox", "--"],
    ["status", "x", "--wait", "nosuch"],  # not one of its choices
    ["--agent", "inbox"],  # --agent took the word: no command is left
    ["done", "a", "b"],  # nargs="*": argparse's own
]


def _argparse(argv: list[str]) -> dict[str, object]:
    return vars(build_parser(only=command_word(argv)).parse_args(argv))


@pytest.mark.parametrize("argv", PLAIN)
def test_a_plain_line_is_parsed_as_argparse_parses_it(argv: list[str]) -> None:
    [command] = declared(command_word(argv))
    found = parse_plain(argv, command)
    assert found is not None
    assert vars(found) == _argparse(argv)


@pytest.mark.parametrize("argv", LEFT_TO_ARGPARSE)
def test_any_other_line_is_left_to_argparse(argv: list[str]) -> None:
    word = command_word(argv)
    commands = declared(word) if word in COMMAND_NAMES else []
    assert not commands or parse_plain(argv, commands[0]) is None


def test_every_command_alone_parses_as_argparse_parses_it_or_is_left_to_it() -> None:
    """Whatever a command declares, its bare line is never parsed differently."""
    for command in declared():
        argv = [command.name]
        found = parse_plain(argv, command)
        if found is not None:
            assert vars(found) == _argparse(argv), command.name
