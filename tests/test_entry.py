"""The console script's shortcut for ``hook`` reads a command line as the full parser does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mailslot import FileStore, Mailbox
from mailslot.access.identity import Identity
from mailslot.entry import SKIP_TEARDOWN, hook_command
from mailslot.frontends.cli.main import command_word
from mailslot.frontends.cli.parser import build_parser
from support import unlimited


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


# Which commands end with os._exit ----------------------------------------------------
PROBE = """
import atexit, json, os, sys
report, argv = sys.argv[1], sys.argv[2:]

def note(how):
    threads = sys.modules["threading"].active_count() if "threading" in sys.modules else 1
    with open(report, "w") as out:
        json.dump({"how": how, "threads": threads,
                   "open": sorted({"sqlite3", "psycopg"} & set(sys.modules))}, out)

end = os._exit
def skipped(code):
    note("skipped")
    end(code)
os._exit = skipped
atexit.register(note, "teardown")
sys.argv = ["mailslot", *argv]
from mailslot.entry import main
sys.exit(main())
"""


def run_entry(tmp_path: Path, root: Path, *argv: str,
              stdin: str = "") -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """The console script as a real process on ``root``, and how it ended: ``skipped``
    (os._exit) or ``teardown`` (the interpreter's normal exit), with the threads still
    running and the database modules loaded at that moment."""
    report = tmp_path / "ended.json"
    report.unlink(missing_ok=True)
    env = {**os.environ, "MAILSLOT_DIR": str(root)}
    env.pop("MAILSLOT_STORE", None)
    proc = subprocess.run([sys.executable, "-c", PROBE, str(report), *argv], input=stdin,
                          capture_output=True, text=True, env=env, timeout=60, check=False)
    return proc, json.loads(report.read_text())


@pytest.fixture
def mailbox(tmp_path: Path) -> tuple[Path, list[str]]:
    """A mailbox where sarah sent gemini 150 messages (more than a pipe holds as JSON)."""
    root = tmp_path / "box"
    unlimited(FileStore(root))
    sarah = Mailbox(FileStore(root), Identity("sarah", "--agent"))
    ids = [sarah.send(["gemini"], f"note {n}", f"body {n}\n" * 20).id for n in range(150)]
    return root, ids


@pytest.mark.parametrize("word", sorted(SKIP_TEARDOWN))
def test_the_list_names_only_real_commands(word: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A name in the list is a command the parser knows (its help, exit 0), so the list
    cannot keep a command that was renamed away."""
    with pytest.raises(SystemExit) as ended:
        build_parser().parse_args([word, "--help"])
    assert ended.value.code == 0 and f"mailslot {word}" in capsys.readouterr().out


def test_each_listed_command_ends_with_its_writes_complete(
        tmp_path: Path, mailbox: tuple[Path, list[str]]) -> None:
    """Every command of the list, run as a real process: it ends by os._exit with no
    other thread running and no database handle, its output is whole and what it wrote
    is there, complete, once the process is gone."""
    root, ids = mailbox
    me = ("--agent", "gemini")
    sarah = ("--agent", "sarah")
    old = Mailbox(FileStore(root), Identity("sarah", "--agent")).broadcast("old", "z").id
    session = json.dumps({"session_id": "s-1", "hook_event_name": "SessionStart"})
    runs: list[tuple[tuple[str, ...], str]] = [
        ((*me, "inbox", "--all", "--limit", "500", "--json"), ""),
        ((*me, "read", ids[0]), ""),
        ((*me, "mark-read", ids[1]), ""),
        ((*me, "done", ids[2], ids[3]), ""),
        ((*me, "reply", ids[4], "--body", "on it"), ""),
        ((*sarah, "send", "--to", "gemini", "--subject", "late", "--body", "x"), ""),
        ((*sarah, "broadcast", "--subject", "all hands", "--body", "y"), ""),
        ((*sarah, "retract", old), ""),
        ((*sarah, "sent"), ""),
        ((*sarah, "status", ids[6]), ""),
        (("who",), ""),
        ((*me, "whoami"), ""),
        (("completion", "bash"), ""),
        ((*me, "hook", "claude", "session-start"), session),
    ]
    assert {command_word(list(argv)) for argv, _ in runs} == SKIP_TEARDOWN
    for argv, stdin in runs:
        proc, ended = run_entry(tmp_path, root, *argv, stdin=stdin)
        assert proc.returncode == 0, (argv, proc.stderr)
        assert ended == {"how": "skipped", "threads": 1, "open": []}, (argv, ended)
        if argv[-1] == "--json":
            listed = json.loads(proc.stdout)  # the whole of a 150-message answer
            assert {m["id"] for m in listed} == {*ids, old}
    store = FileStore(root)
    assert store.problems() == [] and store.unreadable() == []
    held = dict(store.entries("gemini", ["unread", "read", "done"]))
    assert held[ids[0]] == held[ids[1]] == "read"
    assert held[ids[2]] == held[ids[3]] == "done"
    late = [store.load("gemini", i)[0] for i, state in held.items() if state == "unread"]
    assert any(m.subject == "late" and m.body.strip() == "x" for m in late)
    replies = [store.load("sarah", i)[0] for i, _ in store.entries("sarah", ["unread"])]
    assert [m.body.strip() for m in replies] == ["on it"]


@pytest.mark.parametrize("argv", [("config", "show"), ("doctor",), ("--help",),
                                  ("--agent", "gemini", "search", "note")])
def test_a_command_not_listed_ends_through_the_interpreter(
        tmp_path: Path, mailbox: tuple[Path, list[str]], argv: tuple[str, ...]) -> None:
    root, _ = mailbox
    assert command_word(list(argv)) not in SKIP_TEARDOWN
    proc, ended = run_entry(tmp_path, root, *argv)
    assert proc.returncode == 0, proc.stderr
    assert ended["how"] == "teardown"
