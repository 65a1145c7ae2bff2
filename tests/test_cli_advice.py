"""The advice an error gives is a command line the CLI accepts, as it is shown."""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

import pytest

from mailslot.frontends.cli.parser import build_parser
from support import run_cli

SOURCE = Path(__file__).resolve().parent.parent / "src" / "mailslot"
AN_ID = "2026-09-21_144808.123456_claude_to_gemini_7f3a9c2e"


def advice() -> list[tuple[str, str]]:
    """``(where, text)`` of every string put into a raised error, placeholders (``{x}``
    of an f-string) as ``gemini``."""
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Raise) or node.exc is None:
                continue
            parts = [n.value if isinstance(n, ast.Constant) else "gemini"
                     for n in ast.walk(node.exc)
                     if isinstance(n, ast.Constant | ast.FormattedValue)
                     and not isinstance(getattr(n, "value", None), int | float | None)]
            text = "".join(p for p in parts if isinstance(p, str))
            found.append((f"{path.relative_to(SOURCE)}:{node.lineno}", text))
    return found


def accepted_options() -> set[str]:
    parser = build_parser()
    options = set(parser._option_string_actions)
    for action in parser._subparsers._group_actions:  # type: ignore[union-attr]
        for sub in action.choices.values():  # type: ignore[union-attr]
            options |= set(sub._option_string_actions)
    return options


def test_every_option_an_error_advises_exists() -> None:
    options = accepted_options()
    wrong = [(where, flag) for where, text in advice()
             for flag in re.findall(r"(?<![\w-])--[a-z][a-z-]*", text) if flag not in options]
    assert not wrong


def test_every_mailslot_command_an_error_advises_parses() -> None:
    lines = [(where, line) for where, text in advice()
             for line in re.findall(r"`(mailslot [^`]+)`", text)]
    assert lines  # the scan finds them
    for where, line in lines:
        words = [AN_ID if w == "ID" else w for w in shlex.split(line)[1:]]
        try:
            build_parser().parse_args(words)
        except SystemExit:
            pytest.fail(f"{where}: `{line}` is not a command line mailslot accepts")


def test_the_credential_a_refusal_asks_for_is_a_global_option(isolated: Path) -> None:
    added = run_cli("agent", "add", "claude", "--yes")
    assert added.returncode == 0, added.stderr
    credential = isolated / "home" / ".config" / "mailslot" / "credentials" / "claude.json"
    assert str(credential) in added.stdout
    send = ("send", "--to", "gemini", "--subject", "s", "--body", "b", "--new")
    refused = run_cli("--agent", "claude", *send)
    assert refused.returncode == 1 and "--credential FILE" in refused.stderr
    for line in (["--credential", str(credential), *send],
                 [*send, "--credential", str(credential)],
                 ["gate", "on", "--credential", str(credential)],
                 [f"--credential={credential}", "gate", "off"],
                 ["--credential", str(credential), "sent"]):
        ran = run_cli(*line)
        assert ran.returncode == 0, f"{line}: {ran.stderr}"
    whoami = run_cli("--credential", str(credential), "whoami").stdout
    assert "claude (from credential)" in whoami


def test_the_registration_a_refusal_asks_for_runs(isolated: Path, root: Path) -> None:
    assert run_cli("init").returncode == 0
    (root / "config.json").write_text('{"require_credentials": true}\n')
    refused = run_cli("--agent", "gemini", "send", "--to", "claude", "--subject", "s",
                      "--body", "b", "--new")
    assert refused.returncode == 1
    [line] = re.findall(r"`(mailslot [^`]+)`", refused.stderr)
    ran = run_cli(*shlex.split(line)[1:], "--yes")  # --yes: no terminal here to confirm
    assert ran.returncode == 0, ran.stderr
