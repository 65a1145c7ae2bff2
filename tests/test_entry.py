"""The console script's shortcut for ``hook`` reads a command line as the full parser does."""

from __future__ import annotations

import pytest

from mailslot.cli import build_parser
from mailslot.entry import hook_command


@pytest.mark.parametrize("argv", [
    ["hook", "claude", "session-start"],
    ["--agent", "gemini", "hook", "claude", "stop"],
    ["--dir", "/tmp/box", "--agent=gemini", "hook", "codex", "user-prompt-submit"],
    ["hook", "gemini", "after-agent", "--agent", "gemini", "--dir=/x"],
    ["--agent", "a", "hook", "cursor", "stop", "--agent", "b"],
    ["hook", "vim", "whatever"],
    ["--json", "hook", "claude", "stop", "--no-color"],
])
def test_shortcut_agrees_with_the_parser(argv: list[str]) -> None:
    args = build_parser().parse_args(argv)
    assert hook_command(argv) == (
        args.host, args.event,
        {k: v for k, v in (("dir", args.dir), ("agent", args.agent)) if v is not None})


@pytest.mark.parametrize("argv", [
    [], ["inbox"], ["hook"], ["hook", "claude"], ["hook", "claude", "stop", "extra"],
    ["hook", "--help"], ["-h"], ["hook", "claude", "stop", "--json=1"],
    ["--agent", "hook", "claude", "stop"], ["--agent"], ["--agent=", "hook", "claude", "stop"],
    ["--ag", "x", "hook", "claude", "stop"], ["send", "hook", "claude"],
])
def test_anything_else_goes_to_the_full_parser(argv: list[str]) -> None:
    assert hook_command(argv) is None
