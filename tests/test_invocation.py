"""The command prefix shown to a model: runnable from its shell as it is."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from hookkit import fixture
from mailslot import Mailbox
from mailslot.access.identity import Identity
from mailslot.backends import open_store
from mailslot.core.framing import HEADER, frame, injection
from mailslot.mail.invocation import invocation, program
from mailslot.wake.bank import entry_text, index_text
from mailslot.wake.notice import wake_notice
from support import run_cli

MINE = str(Path(sys.executable).parent / "mailslot")


def test_not_on_path_the_program_is_this_installations_absolute_path() -> None:
    assert program({"PATH": "/usr/bin:/bin"}) == MINE


def test_on_path_it_is_the_bare_name(tmp_path: Path) -> None:
    assert program({"PATH": f"{tmp_path}:{Path(MINE).parent}"}) == "mailslot"


def test_another_mailslot_first_on_path_is_not_taken_for_this_one(tmp_path: Path) -> None:
    other = tmp_path / "mailslot"
    other.write_text("#!/bin/sh\n")
    other.chmod(0o755)
    assert program({"PATH": f"{tmp_path}:{Path(MINE).parent}"}) == MINE


def test_always_names_the_agent_and_names_a_mailbox_that_is_not_the_default(
    tmp_path: Path
) -> None:
    env = {"PATH": str(Path(MINE).parent)}
    assert invocation("gemini", "~/mailslot", env) == "mailslot --agent gemini"
    assert invocation("gemini", os.path.expanduser("~/mailslot/"), env) == \
        "mailslot --agent gemini"
    box = tmp_path / "box"
    assert invocation("gemini", str(box), env) == f"mailslot --agent gemini --dir {box}"


def test_a_path_with_spaces_is_quoted(tmp_path: Path) -> None:
    box = tmp_path / "my box"
    line = invocation("gemini", str(box), {"PATH": "/usr/bin"})
    assert line == f"{MINE} --agent gemini --dir '{box}'"


# Every command shown to a model, run as the model's shell would run it ----------------
def shown_commands(text: str) -> list[str]:
    """The command lines a text shows: each `quoted` span that runs mailslot, and the
    wake notice's "with the command ... or" (shown bare, without backticks)."""
    spans = re.findall(r"`([^`\n]+)`", text)
    spans += re.findall(r"with the command (.+?) or the MCP tool", text)
    return [s for s in spans if Path(shlex.split(s)[0]).name == "mailslot"]


def the_models_shell(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """``argv`` in a shell that knows no mailbox (no ``MAILSLOT_*``), elsewhere."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAILSLOT_")}
    return subprocess.run(argv, input=b"an answer", capture_output=True, cwd=cwd, env=env,
                          timeout=120, check=False)


@pytest.fixture(params=["folder", "postgresql"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A real mailbox: a folder, or a fresh PostgreSQL database with mailslot's schema."""
    if request.param == "folder":
        return str(tmp_path / "mailbox")
    url: str = request.getfixturevalue("pg_cluster").new_database()
    assert run_cli("init", "--store", url).returncode == 0
    return url


def test_every_command_shown_to_a_model_runs_from_its_shell(
        location: str, tmp_path: Path) -> None:
    store = open_store(location)
    sender = Mailbox(store, Identity("claude", "--agent"))
    first = sender.send("gemini", "Schema change", "x\n" * 50)
    second = sender.send("gemini", "Second", "y")
    Mailbox(store, Identity("gemini", "--agent")).gate.switch(True)
    asked = Mailbox(store, Identity("codex", "--agent")).gate.join("gemini", "let me in")
    env = {**os.environ, "MAILSLOT_STORE": location}
    hook = run_cli("hook", "claude", "session-start", "--agent", "gemini",
                   stdin=fixture("claude-session-start"), env=env)
    assert hook.returncode == 0 and "Schema change" in hook.stdout
    cli = invocation("gemini", store.location)
    loaded = {first.id: first, second.id: second}  # and one that cannot be read
    summary, _ = injection(sorted([*loaded, "2999-01-01_000000.000000_x_to_gemini_0bad0bad"]),
                           loaded.get, limit=len(HEADER) + 700, scope="waiting for gemini",
                           cli=cli)
    texts = {
        "hook": json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"],
        "frame": frame(first, cli=cli, max_body=10),
        "injection summary": summary,
        "wake notice": wake_notice("gemini", [first], cli),
        "bank notice": entry_text("gemini", first, store.location),
        "bank index": index_text("gemini", store.location, []),
        "join request": asked.body,
    }
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ran_already: set[str] = set()
    for where, text in texts.items():
        commands = shown_commands(text)
        assert commands, f"{where} shows no command: {text}"
        for line in commands:
            argv = [first.id if word == "ID" else word for word in shlex.split(line)]
            if argv[-2:] == ["admit", "codex"] or line in ran_already:
                continue  # admit's twin, refuse, is run: a request is answered once
            ran_already.add(line)
            ran = the_models_shell(argv, elsewhere)
            assert ran.returncode == 0, f"{where}: `{line}` failed: {ran.stderr.decode()}"
    assert "doctor" in summary and "--limit 3" in summary
    assert store.state_of("gemini", first.id) == "done"  # the reply and done shown ran
