"""The tmux method against a real tmux server running a small fake agent prompt."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mailslot import FileStore, Mailbox
from mailslot.wake.runner import Pass, WakeRunner
from wake_helpers import configure, events, queue_empty, wait_until

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
Box = Callable[[str | None], Mailbox]
PROGRAM = Path(sys.executable).name  # what tmux shows as the pane's command

FAKE_AGENT = """
import json, os, select, sys, time
record, busy = sys.argv[1], sys.argv[2]
def note(kind, text=""):
    with open(record, "a") as f:
        f.write(json.dumps({"kind": kind, "text": text, "t": time.time()}) + "\\n")
n = 0
while os.path.exists(busy):  # busy: the screen keeps changing; typed lines are noted
    n += 1
    print(f"working... {n}", flush=True)
    if select.select([sys.stdin], [], [], 0.05)[0]:
        note("busy-input", sys.stdin.readline())
note("ready")
while True:
    try:
        line = input("agent> ")
    except EOFError:
        break
    note("line", line)
    print(f"(agent read {len(line)} characters)")
"""


class Tmux:
    """A private tmux server (its own socket), killed at the end of the test."""

    def __init__(self, socket: str) -> None:
        self.socket = socket
        self.started = False

    def __call__(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args],
                              capture_output=True, text=True, check=True, timeout=60)
        return done.stdout

    def pane(self, *argv: str) -> str:
        where = ("new-window", "-d", "-t", "t:") if self.started else (
            "new-session", "-d", "-s", "t", "-x", "160", "-y", "40")
        self.started = True
        return self(*where, "-P", "-F", "#{pane_id}", *argv).strip()

    def screen(self, pane: str) -> str:
        return self("capture-pane", "-p", "-J", "-t", pane)


@pytest.fixture
def tmux(monkeypatch: pytest.MonkeyPatch) -> Iterator[Tmux]:
    monkeypatch.delenv("TMUX", raising=False)
    server = Tmux(f"mailslot-test-{uuid.uuid4().hex[:12]}")
    yield server
    subprocess.run(["tmux", "-L", server.socket, "kill-server"], capture_output=True, check=False)


@pytest.fixture
def agent_prompt(tmp_path: Path) -> Path:
    script = tmp_path / "fake_agent.py"
    script.write_text(FAKE_AGENT)
    return script


def notes(record: Path) -> list[dict[str, Any]]:
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text().splitlines()]


def tmux_agent(tmux: Tmux, pane: str, **extra: Any) -> dict[str, Any]:
    return {"wake_on_mail": True, "wake_method": "tmux", "tmux_target": pane,
            "tmux_program": PROGRAM, "tmux_socket": tmux.socket,
            "tmux_idle_seconds": 0.3, "tmux_busy_seconds": 30, **extra}


def test_notice_arrives_once_with_the_watcher_running(
        box: Box, root: Path, tmp_path: Path, tmux: Tmux, agent_prompt: Path) -> None:
    record = tmp_path / "agent.jsonl"
    pane = tmux.pane(sys.executable, str(agent_prompt), str(record), str(tmp_path / "no-busy"))
    wait_until(lambda: "agent> " in tmux.screen(pane), what="the agent's prompt")
    configure(root, {"gemini": tmux_agent(tmux, pane)})
    log = tmp_path / "watch.log"
    with log.open("w") as out:
        watcher = subprocess.Popen([sys.executable, "-m", "mailslot", "watch"],
                                   stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: "watching" in log.read_text(), what="the watcher to start")
        m = box("claude").send("gemini", "Private subject", "secret body")
        wait_until(lambda: [n for n in notes(record) if n["kind"] == "line"], what="the notice")
        wait_until(lambda: queue_empty(root), what="the queue to empty")
    finally:
        watcher.terminate()
        watcher.wait(10)
    lines = [n["text"] for n in notes(record) if n["kind"] == "line"]
    assert len(lines) == 1 and m.id in lines[0] and "claude sent message" in lines[0]
    assert lines[0].startswith("[mailslot]") and "Private subject" not in lines[0]
    assert "secret body" not in lines[0]
    assert [e["event"] for e in events(root)] == ["wake_queued", "wake_attempt", "wake_ok"]


def test_a_busy_pane_is_waited_for(
        box: Box, root: Path, tmp_path: Path, tmux: Tmux, agent_prompt: Path) -> None:
    record, busy = tmp_path / "agent.jsonl", tmp_path / "busy"
    busy.touch()
    pane = tmux.pane(sys.executable, str(agent_prompt), str(record), str(busy))
    wait_until(lambda: "working" in tmux.screen(pane), what="the agent to look busy")
    configure(root, {"gemini": tmux_agent(tmux, pane)})
    m = box("claude").send("gemini", "s", "x")
    done: list[Pass] = []
    waker = threading.Thread(target=lambda: done.append(WakeRunner(FileStore(root)).run_agent(
        "gemini")))
    waker.start()
    wait_until(lambda: [e for e in events(root) if e["event"] == "wake_attempt"],
               what="the wake to start")
    time.sleep(1.0)  # room for a careless waker to type while busy (not an assertion)
    busy.unlink()
    waker.join(40)
    assert done and done[0].results[0].outcome.ok
    wait_until(lambda: [n for n in notes(record) if n["kind"] == "line"], what="the notice")
    kinds = [n["kind"] for n in notes(record)]
    assert "busy-input" not in kinds
    assert kinds == ["ready", "line"] and m.id in notes(record)[1]["text"]


def test_a_pane_running_another_program_is_refused(
        box: Box, root: Path, tmp_path: Path, tmux: Tmux) -> None:
    pane = tmux.pane("sleep", "600")
    configure(root, {"gemini": tmux_agent(tmux, pane,
                                          wake_retry={"attempts": 2, "backoff_seconds": 0})})
    m = box("claude").send("gemini", "s", "x")
    done = WakeRunner(FileStore(root)).run_agent("gemini")
    reasons = [r.outcome.reason for r in done.results]
    assert reasons == [f"tmux pane {pane} runs sleep, not {PROGRAM}; nothing was typed"] * 2
    assert "[mailslot]" not in tmux.screen(pane) and m.id not in tmux.screen(pane)
    assert done.results[-1].told == "claude"
    assert box("claude").inbox()[0].message.subject == "Could not wake gemini"


def test_a_missing_pane_is_refused(box: Box, root: Path, tmux: Tmux) -> None:
    tmux.pane("sleep", "600")
    configure(root, {"gemini": tmux_agent(tmux, "%99", wake_retry={"attempts": 1})})
    box("claude").send("gemini", "s", "x")
    done = WakeRunner(FileStore(root)).run_agent("gemini")
    assert done.results[0].outcome.reason == "tmux pane %99 was not found"


@pytest.mark.parametrize("field", ["tmux_target", "tmux_program", "tmux_socket"])
def test_a_tmux_format_in_a_pane_setting_is_refused_and_runs_nothing(
        box: Box, root: Path, tmp_path: Path, tmux: Tmux, field: str) -> None:
    canary = tmp_path / "pwned"
    pane = tmux.pane("sleep", "600")
    configure(root, {"gemini": tmux_agent(tmux, pane, **{field: f"#(touch {canary})"},
                                          wake_retry={"attempts": 1})})
    m = box("claude").send("gemini", "s", "x")
    done = WakeRunner(FileStore(root)).run_agent("gemini")
    assert f"agents.gemini.{field} is not a" in done.results[0].outcome.reason
    assert not canary.exists() and m.id not in tmux.screen(pane)
