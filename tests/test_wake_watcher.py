"""``mailslot watch`` as a real process: events, polling, two watchers, SIGKILL, --once."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

from conftest import Result
from mailslot import FileStore, Mailbox
from mailslot.frontends.watcher import watch
from mailslot.wake.claims import Queue
from wake_helpers import calls, configure, events, fake_host, queue_empty, wait_until

Box = Callable[[str | None], Mailbox]
Cli = Callable[..., Result]


def notify_agent(bin_dir: Path) -> dict[str, Any]:
    return {"wake_on_mail": True, "wake_method": "command",
            "command": [str(bin_dir / "notify"), "{id}"]}


@contextmanager
def watcher(tmp_path: Path, *options: str) -> Iterator[Path]:
    """A ``mailslot watch`` process, stopped at the end; yields its output file."""
    log = tmp_path / f"watch-{uuid.uuid4().hex[:8]}.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "mailslot", "watch", *options],
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: "watching" in log.read_text(), what="the watcher to start")
        yield log
    finally:
        proc.terminate()
        proc.wait(10)


def test_watcher_wakes_on_file_system_events(
        box: Box, root: Path, bin_dir: Path, tmp_path: Path) -> None:
    record = fake_host(bin_dir, "notify")
    configure(root, {"gemini": notify_agent(bin_dir)})
    with watcher(tmp_path) as log:
        m = box("claude").send("gemini", "s", "x")
        wait_until(lambda: calls(record), what="the wake")
        assert "inotify events" in log.read_text() or "FSEvents" in log.read_text()
        wait_until(lambda: f"woke gemini (command) for {m.id}" in log.read_text(),
                   what="the watcher's report")
    assert [c["argv"] for c in calls(record)] == [[m.id]]


def test_watcher_falls_back_to_polling(
        box: Box, root: Path, bin_dir: Path, tmp_path: Path) -> None:
    record = fake_host(bin_dir, "notify")
    configure(root, {"gemini": notify_agent(bin_dir)})
    with watcher(tmp_path, "--poll", "0.05") as log:
        assert "polling every 0.05 s" in log.read_text()
        m = box("claude").send("gemini", "s", "x")
        wait_until(lambda: calls(record), what="the wake")
    assert calls(record)[0]["argv"] == [m.id]


def test_two_watchers_wake_each_message_once(
        box: Box, root: Path, bin_dir: Path, tmp_path: Path) -> None:
    record = fake_host(bin_dir, "notify")
    agents = ["gemini", "codex", "cursor"]
    configure(root, {a: notify_agent(bin_dir) for a in agents})
    with watcher(tmp_path), watcher(tmp_path):
        sent = [box("claude").send(agents[n % 3], f"m{n}", "x").id for n in range(30)]
        wait_until(lambda: len(calls(record)) >= 30 and queue_empty(root), 60,
                   what="every wake")
    woken = [c["argv"][0] for c in calls(record)]
    assert sorted(woken) == sorted(sent)  # each once: none missed, none twice
    assert sum(e["event"] == "wake_ok" for e in events(root)) == 30


def test_a_watcher_killed_mid_wake_leaves_the_wake_to_the_next(
        box: Box, root: Path, bin_dir: Path, tmp_path: Path) -> None:
    record = fake_host(bin_dir, "notify", hang_first=True)
    configure(root, {"gemini": notify_agent(bin_dir)})
    hung = Path(f"{record}.hung")
    log = tmp_path / "first.log"
    with log.open("w") as out:
        first = subprocess.Popen([sys.executable, "-m", "mailslot", "watch"], stdout=out)
    try:
        wait_until(lambda: "watching" in log.read_text(), what="the first watcher")
        m = box("claude").send("gemini", "s", "x")
        wait_until(hung.exists, what="the first wake to hang")
        with watcher(tmp_path) as second_log:
            first.send_signal(signal.SIGKILL)
            first.wait(10)
            wait_until(lambda: len(calls(record)) == 2 and queue_empty(root), 30,
                       what="the second watcher to retry")
            report = f"woke gemini (command) for {m.id} (attempt 2)"
            wait_until(lambda: report in second_log.read_text(), what="its report")
    finally:
        if first.poll() is None:
            first.kill()
        if hung.exists():
            with_pid = int(hung.read_text() or 0)
            if with_pid:
                with suppress(ProcessLookupError):
                    os.kill(with_pid, signal.SIGKILL)
    assert [c["argv"] for c in calls(record)] == [[m.id], [m.id]]
    wakes = [(e["event"], e["attempt"]) for e in events(root) if e["event"] != "wake_queued"]
    assert wakes == [("wake_attempt", 1), ("wake_failed", 1), ("wake_attempt", 2),
                     ("wake_ok", 2)]
    assert "interrupted" in events(root)[2]["reason"]


def test_stopping_the_watcher_ends_a_running_wake_and_keeps_it_queued(
        box: Box, root: Path, bin_dir: Path, tmp_path: Path) -> None:
    record = fake_host(bin_dir, "notify", hang_first=True)
    configure(root, {"gemini": notify_agent(bin_dir)})
    log = tmp_path / "watch.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "mailslot", "watch"], stdout=out)
    try:
        wait_until(lambda: "watching" in log.read_text(), what="the watcher")
        m = box("claude").send("gemini", "s", "x")
        hung = wait_until(lambda: calls(record), what="the wake to start")[0]["pid"]
        proc.terminate()
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    with pytest.raises(ProcessLookupError):
        os.kill(hung, 0)  # the host program was ended with the watcher
    assert "the watcher is stopping; trying again in 5 s" in log.read_text()
    assert [e.message_id for e in Queue(FileStore(root)).pending("gemini")] == [m.id]


def test_watch_once_processes_what_is_pending_and_exits(
        box: Box, root: Path, bin_dir: Path, cli: Cli) -> None:
    record = fake_host(bin_dir, "notify")
    configure(root, {"gemini": notify_agent(bin_dir)})
    ids = [box("claude").send("gemini", f"m{n}", "x").id for n in range(2)]
    r = cli("watch", "--once")
    assert r.code == 0 and r.out.count("woke gemini") == 2
    assert [c["argv"][0] for c in calls(record)] == ids
    assert cli("watch", "--once").code == 0 and len(calls(record)) == 2


def test_watch_once_reports_a_retry_left_for_later(
        box: Box, root: Path, bin_dir: Path, cli: Cli) -> None:
    fake_host(bin_dir, "notify", code=1)
    configure(root, {"gemini": notify_agent(bin_dir)})
    box("claude").send("gemini", "s", "x")
    r = cli("watch", "--once")
    assert "notify exited with status 1; trying again in 5 s" in r.out
    assert "gemini: next wake attempt due at" in r.out


def test_validate_prints_what_each_wake_would_do(root: Path, bin_dir: Path, cli: Cli) -> None:
    fake_host(bin_dir, "claude")
    configure(root, {
        "gemini": {"wake_on_mail": True, "wake_method": "claude", "session_id": "abc-1"},
        "codex": {"wake_on_mail": "requested", "wake_method": "codex", "session_id": "c-2"},
        "cursor": {"wake_on_mail": False, "wake_method": "unsupported"},
    })
    r = cli("watch", "--validate")
    assert r.code == 0, r.out
    assert "gemini: woken for every directed message; wake_method: claude" in r.out
    assert "→ runs: claude -p '[mailslot] gemini, you have new mail: <sender> sent" in r.out
    assert "--resume abc-1" in r.out
    assert "warning: codex is not on the watcher's PATH" in r.out
    assert "cursor: never woken" in r.out
    assert "tmux" not in r.out and "agentapi" not in r.out  # only the configured methods
    data = json.loads(cli("watch", "--validate", "--json").out)
    assert data["ok"] and [a["agent"] for a in data["agents"]] == ["codex", "cursor", "gemini"]


def test_validate_fails_on_a_config_error(root: Path, cli: Cli) -> None:
    configure(root, {"gemini": {"wake_on_mail": True, "wake_method": "tmux"}})
    r = cli("watch", "--validate")
    assert r.code == 1 and "problem: config.json: agents.gemini.tmux_target is missing" in r.out


def test_watch_options_are_exclusive(cli: Cli) -> None:
    assert cli("watch", "--once", "--validate").code == 2
    assert cli("watch", "--poll", "0").code == 2


def test_send_and_validate_never_import_watchdog(root: Path, bin_dir: Path) -> None:
    configure(root, {"gemini": notify_agent(bin_dir)})
    code = (
        "import sys\n"
        "from mailslot.frontends.cli.main import main\n"
        "assert main(['--agent', 'claude', 'send', '--to', 'gemini', '--subject', 's',"
        " '--body', 'x']) == 0\n"
        "assert 'mailslot.wake.queue' in sys.modules\n"
        "heavy = ('watchdog', 'mcp', 'pydantic', 'starlette')\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in heavy\n"
        "            or m in ('mailslot.wake.runner', 'mailslot.wake.tmux')], 'send'\n"
        "main(['watch', '--validate'])\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in heavy\n"
        "            or m == 'mailslot.frontends.watcher'], 'validate'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr


def test_watch_prints_each_wake_as_it_happens(
        box: Box, root: Path, bin_dir: Path, tmp_path: Path) -> None:
    """Not when the whole pass ends: the second wake hangs, the first is already told."""
    release = tmp_path / "release"
    program = bin_dir / "notify"
    second_id = tmp_path / "second"
    program.write_text(f"#!{sys.executable}\nimport os, sys, time\n"
                       f"if sys.argv[1] == open({str(second_id)!r}).read():\n"
                       f"    while not os.path.exists({str(release)!r}): time.sleep(0.01)\n")
    program.chmod(0o755)
    configure(root, {"gemini": notify_agent(bin_dir)})
    first = box("claude").send("gemini", "one", "x")
    second = box("claude").send("gemini", "two", "x")
    second_id.write_text(second.id)
    out = io.StringIO()
    thread = threading.Thread(target=watch, args=(FileStore(root),),
                              kwargs={"once": True, "out": out})
    thread.start()
    try:
        wait_until(lambda: f"woke gemini (command) for {first.id}" in out.getvalue(),
                   what="the first wake to be reported while the second runs")
        assert second.id not in out.getvalue()
    finally:
        release.touch()
        thread.join(timeout=60)
    assert f"woke gemini (command) for {second.id}" in out.getvalue()


def test_a_failed_wake_reports_its_stderr_tail(
        box: Box, root: Path, bin_dir: Path, cli: Cli) -> None:
    program = bin_dir / "notify"
    bin_dir.mkdir(exist_ok=True)
    program.write_text(f"#!{sys.executable}\nimport os, sys\n"
                       "print('noise ' * 50, file=sys.stderr)\n"
                       "print('login expired for ' + os.environ['MAILSLOT_AGENT'],"
                       " file=sys.stderr)\nprint('\\x1b[31mgiving up\\x1b[0m', file=sys.stderr)\n"
                       "sys.exit(3)\n")
    program.chmod(0o755)
    configure(root, {"gemini": {**notify_agent(bin_dir), "wake_retry": {"attempts": 1}}})
    mid = box("claude").send("gemini", "s", "x").id
    r = cli("watch", "--once", "--json")
    assert r.code == 0
    outcome = next(json.loads(line) for line in r.out.splitlines()
                   if json.loads(line)["event"] == "gave_up")
    assert outcome["agent"] == "gemini" and outcome["message_id"] == mid
    reason = outcome["reason"]
    assert reason.startswith("notify exited with status 3; stderr: ")
    assert reason.endswith("login expired for gemini /  [31mgiving up [0m")
    assert "\x1b" not in reason and len(reason) < 400
    failed = [e for e in events(root) if e["event"] == "wake_failed"]
    assert failed[-1]["reason"] == reason
    notice = box("claude").inbox()[0]
    assert notice.message.sender == "mailslot"
    assert "login expired" in box("claude").read(notice.message.id).message.body


def test_a_pass_that_woke_someone_asks_for_no_second_look(
        box: Box, root: Path, bin_dir: Path) -> None:
    """The pass ran until nothing was due; only a wake queued meanwhile (the agent was
    seen busy) is worth another look. At 20 watchers and 50 senders each extra look
    was eleven queries per wake."""
    from mailslot.frontends.watcher import Watcher

    record = fake_host(bin_dir, "notify")
    configure(root, {"gemini": notify_agent(bin_dir)})
    watcher = Watcher(FileStore(root), io.StringIO())
    try:
        for seen_busy in (False, True):
            box("claude").send("gemini", "s", "x")
            watcher._kick.clear()
            if seen_busy:
                watcher._dirty.add((0, "gemini"))
            watcher._work((0, "gemini"))
            assert watcher._kick.is_set() == seen_busy
        assert len(calls(record)) == 2
    finally:
        watcher.close()
