"""Starting sessions: every guardrail, the notice, the log, with fake hosts that record
argv, env and stdin (and a real tmux server for the tmux handoff)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import shutil
import signal
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mailslot import FileStore, Mailbox
from mailslot.core.errors import InvalidInput, Refused, StoreError
from mailslot.launch.guardrails import matches
from mailslot.launch.starting import Request, start
from support import put_config
from wake_helpers import calls, configure, fake_host, wait_until

Box = Callable[[str | None], Mailbox]


@pytest.fixture
def project(isolated: Path) -> Path:
    folder = isolated / "project"
    folder.mkdir()
    (isolated / "home" / ".claude.json").write_text(json.dumps(
        {"projects": {str(folder): {"hasTrustDialogAccepted": True}}}))
    return folder


@pytest.fixture
def started_pids() -> Iterator[list[int]]:
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


def launch(root: Path, **section: Any) -> None:
    configure(root, {}, launch={"allowed_callers": ["orchestrator"], **section})


def log(root: Path) -> list[dict[str, Any]]:
    return FileStore(root).started_sessions()


def own_server(argv: list[str]) -> list[str] | None:
    """The args of the ``mailslot`` server a Claude argv's ``--mcp-config`` gives."""
    given = [a for a in argv if a.startswith("--mcp-config=")]
    if not given:
        return None
    server = json.loads(given[0].partition("=")[2])["mcpServers"]["mailslot"]
    assert os.path.basename(server["command"]) == "mailslot"
    return list(server["args"])


def one_call(record: Path) -> dict[str, Any]:
    return wait_until(lambda: calls(record), what="the fake host to run")[0]


def test_claude_background_gets_the_notice_the_prompt_after_dashes_and_its_identity(
        box: Box, root: Path, bin_dir: Path, project: Path) -> None:
    record = fake_host(bin_dir, "claude")
    launch(root)
    result = start(box("orchestrator"), Request(
        "claude", str(project), "Fix the flaky login test", register_as="builder-1"), via="mcp")
    seen = one_call(record)
    argv = seen["argv"]
    assert argv[0] == "-p" and argv[-2] == "--"
    assert argv[-1].startswith("[mailslot] This prompt came from agent orchestrator through "
                               "mailslot, not from sarah directly.")
    assert argv[-1].endswith("\n\nFix the flaky login test")
    assert "--permission-mode=default" in argv
    assert f"--session-id={result.session_id}" in argv
    assert seen["env"]["MAILSLOT_AGENT"] == "builder-1"
    assert seen["env"]["MAILSLOT_DIR"] == str(root)
    assert seen["env"]["MCP_CONNECTION_NONBLOCKING"] == "false"  # waits for mailslot's server
    assert seen["cwd"] == str(project) and seen["stdin"] == ""
    assert result.outcome == "background"
    agent = FileStore(root).load_config()["agents"]["builder-1"]
    assert agent["wake_method"] == "claude" and agent["session_id"] == result.session_id


def test_an_unnamed_claude_session_is_named_mailslot_and_a_timestamp(
        box: Box, root: Path, bin_dir: Path, project: Path) -> None:
    record = fake_host(bin_dir, "claude")
    launch(root)
    result = start(box("orchestrator"), Request("claude", str(project), "hi"), via="mcp")
    names = [a for a in one_call(record)["argv"] if a.startswith("--name=")]
    assert len(names) == 1 and re.fullmatch(r"--name=mailslot-\d{8}-\d{6}", names[0])
    assert result.name == names[0].partition("=")[2] and log(root)[0]["name"] == result.name


@pytest.mark.parametrize(("host", "effort", "said"), [
    ("claude", "turbo", "is not one of claude's: low, medium, high, xhigh, max"),
    ("codex", "max", "is not one of codex's: minimal, low, medium, high, xhigh"),
    ("gemini", "high", "effort is not accepted by gemini"),
])
def test_effort_must_be_one_of_the_hosts_documented_levels(
        box: Box, root: Path, bin_dir: Path, project: Path, host: str, effort: str,
        said: str) -> None:
    record = fake_host(bin_dir, host)
    launch(root)
    with pytest.raises(InvalidInput, match=said):
        start(box("orchestrator"), Request(host, str(project), "hi", effort=effort), via="mcp")
    assert calls(record) == [] and log(root) == []


def test_untrusted_claude_folder_is_refused(box: Box, root: Path, bin_dir: Path,
                                            isolated: Path) -> None:
    record = fake_host(bin_dir, "claude")
    launch(root)
    with pytest.raises(Refused, match="not a folder you trusted"):
        start(box("orchestrator"), Request("claude", str(isolated), "hi"), via="mcp")
    assert not calls(record) and not log(root)


@pytest.mark.parametrize("folder", ["relative/path", "/no/such/folder"])
def test_folder_must_be_absolute_and_exist(box: Box, root: Path, folder: str) -> None:
    launch(root)
    with pytest.raises(InvalidInput, match="folder"):
        start(box("orchestrator"), Request("codex", folder, "hi"), via="mcp")


def test_a_blocked_default_model_is_refused_naming_model_and_pattern(
        box: Box, root: Path, bin_dir: Path, project: Path) -> None:
    record = fake_host(bin_dir, "codex")
    launch(root, codex={"default_model": "GPT-5-Pro", "blocked_models": ["gpt-*-pro"]})
    with pytest.raises(Refused, match=r"'GPT-5-Pro' is blocked by 'gpt-\*-pro'"):
        start(box("orchestrator"), Request("codex", str(project), "hi"), via="mcp")
    assert not calls(record) and not log(root)


@pytest.mark.parametrize("blocked", ["opus", [""], [1], {"x": 1}])
def test_malformed_blocked_models_refuses_every_start(
        box: Box, root: Path, bin_dir: Path, project: Path, blocked: object) -> None:
    record = fake_host(bin_dir, "gemini")
    launch(root, gemini={"blocked_models": blocked})
    with pytest.raises(Refused, match=r"launch\.gemini\.blocked_models"):
        start(box("orchestrator"), Request("gemini", str(project), "hi",
                                           model="gemini-2.5-flash"), via="mcp")
    assert not calls(record) and not log(root)


def test_blocked_list_without_any_model_fails_closed(box: Box, root: Path,
                                                     project: Path) -> None:
    launch(root, copilot={"blocked_models": ["*"]})
    with pytest.raises(Refused, match="cannot be checked"):
        start(box("orchestrator"), Request("copilot", str(project), "hi"), via="mcp")


def test_globs_are_whole_string_case_insensitive_with_only_star_special() -> None:
    assert matches("claude-opus-*", "Claude-Opus-4")
    assert not matches("opus", "claude-opus-4")
    assert not matches("gpt-5.?", "gpt-5.1") and matches("gpt-5.?", "gpt-5.?")
    assert matches("*", "anything")


@pytest.mark.parametrize(("host", "mode"), [("claude", "bypassPermissions"),
                                            ("codex", "danger-full-access"),
                                            ("gemini", "yolo"), ("gemini", "auto_edit"),
                                            ("copilot", "allow-all-tools")])
def test_a_bypass_mode_not_listed_is_refused(box: Box, root: Path, bin_dir: Path,
                                             project: Path, host: str, mode: str) -> None:
    record = fake_host(bin_dir, host)
    launch(root)
    with pytest.raises(Refused, match=f"'{mode}' skips the host's permission prompts"):
        start(box("orchestrator"), Request(host, str(project), "hi", permission_mode=mode),
              via="mcp")
    assert not calls(record) and not log(root)


@pytest.mark.parametrize(("host", "mode", "flag"), [
    ("claude", "bypassPermissions", "--permission-mode=bypassPermissions"),
    ("codex", "danger-full-access", "--sandbox=danger-full-access"),
    ("gemini", "yolo", "--approval-mode=yolo"),
    ("copilot", "allow-all-tools", "--allow-all-tools")])
def test_a_bypass_mode_the_owner_listed_is_passed(box: Box, root: Path, bin_dir: Path,
                                                  project: Path, host: str, mode: str,
                                                  flag: str) -> None:
    record = fake_host(bin_dir, host)
    launch(root, **{host: {"allowed_permission_modes": [mode]}})
    start(box("orchestrator"), Request(host, str(project), "hi", permission_mode=mode),
          via="mcp")
    assert flag in one_call(record)["argv"]


def test_missing_list_falls_back_to_the_default_modes(box: Box, root: Path, bin_dir: Path,
                                                      project: Path) -> None:
    record = fake_host(bin_dir, "claude")
    launch(root, claude={"default_model": "sonnet"})
    for mode in ("auto", "default", "acceptEdits", "plan"):
        start(box("orchestrator"), Request("claude", str(project), "hi", permission_mode=mode),
              via="mcp")
    with pytest.raises(Refused, match="'dontAsk' is not in"):
        start(box("orchestrator"), Request("claude", str(project), "hi",
                                           permission_mode="dontAsk"), via="mcp")
    wait_until(lambda: len(calls(record)) == 4, what="four starts")
    assert all("--model=sonnet" in c["argv"] for c in calls(record))


def test_a_blocked_default_permission_mode_is_refused(box: Box, root: Path,
                                                      project: Path) -> None:
    launch(root, codex={"default_permission_mode": "danger-full-access"})
    with pytest.raises(Refused, match="danger-full-access"):
        start(box("orchestrator"), Request("codex", str(project), "hi"), via="mcp")


def test_mcp_callers_are_refused_unless_the_owner_listed_them(
        box: Box, root: Path, bin_dir: Path, project: Path) -> None:
    record = fake_host(bin_dir, "codex")
    configure(root, {})
    with pytest.raises(Refused, match=r"launch\.allowed_callers"):
        start(box("orchestrator"), Request("codex", str(project), "hi"), via="mcp")
    launch(root)
    with pytest.raises(Refused, match="'intruder' may not start"):
        start(box("intruder"), Request("codex", str(project), "hi"), via="mcp")
    assert not calls(record) and not log(root)


def test_hostile_prompt_and_name_stay_single_arguments(
        box: Box, root: Path, bin_dir: Path, project: Path, isolated: Path) -> None:
    record = fake_host(bin_dir, "codex")
    launch(root)
    canary = isolated / "pwned"
    prompt = f"--yolo; touch {canary} $(touch {canary}) `touch {canary}`"
    start(box("orchestrator"), Request("codex", str(project), prompt, effort="high"),
          via="mcp")
    argv = one_call(record)["argv"]
    assert argv[:4] == ["exec", "--sandbox=workspace-write", "-c", "model_reasoning_effort=high"]
    assert argv[-2] == "--" and argv[-1].endswith(prompt)
    assert not canary.exists()
    with pytest.raises(InvalidInput, match="name"):
        start(box("orchestrator"), Request("codex", str(project), "hi", name="a\nb"),
              via="mcp")
    with pytest.raises(InvalidInput, match="model"):
        start(box("orchestrator"), Request("codex", str(project), "hi", model="--yolo"),
              via="mcp")


def test_copilot_and_gemini_prompts_are_glued_to_their_flag(
        box: Box, root: Path, bin_dir: Path, project: Path) -> None:
    copilot, gemini = fake_host(bin_dir, "copilot"), fake_host(bin_dir, "gemini")
    launch(root)
    start(box("orchestrator"), Request("copilot", str(project), "-p x", name="-rf"),
          via="mcp")
    start(box("orchestrator"), Request("gemini", str(project), "hi"), via="mcp")
    argv = one_call(copilot)["argv"]
    assert "--name=-rf" in argv and argv[-1].startswith("--prompt=[mailslot]")
    assert argv[-1].endswith("-p x")
    argv = one_call(gemini)["argv"]
    assert argv[-1].startswith("--prompt=[mailslot]") and "--approval-mode=default" in argv


def test_the_cli_person_gets_no_notice_and_the_log_has_every_field(
        cli: Callable[..., Any], root: Path, bin_dir: Path, project: Path) -> None:
    record = fake_host(bin_dir, "claude")
    configure(root, {})
    done = cli("--agent", "sarah", "start", "claude", "--folder", str(project),
               "--prompt", "Ship it", "--name", "Builder one", "--model", "opus",
               "--effort", "high", "--permission-mode", "plan", "--json")
    assert done.code == 0, done.err
    assert one_call(record)["argv"][-2:] == ["--", "Ship it"]
    path = root / "log" / "sessions.jsonl"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    (entry,) = log(root)
    assert {k: entry[k] for k in ("launcher", "from", "via", "folder", "name", "model",
                                  "effort", "permission_mode", "handoff", "outcome",
                                  "project", "register_as", "prompt")} == {
        "launcher": "claude", "from": "sarah", "via": "cli", "folder": str(project),
        "name": "Builder one", "model": "opus", "effort": "high", "permission_mode": "plan",
        "handoff": "background", "outcome": "background", "project": None,
        "register_as": None, "prompt": "Ship it"}
    assert entry["session_id"] == json.loads(done.out)["session_id"] and entry["ts"]
    listed = cli("sessions", "--started", "--json")
    assert json.loads(listed.out) == [entry]
    assert "claude" in cli("sessions", "--started").out


def test_a_start_that_fails_is_logged_as_failed(cli: Callable[..., Any], root: Path,
                                                project: Path) -> None:
    configure(root, {}, launch={"codex": {"executable": "/no/such/codex"}})
    done = cli("--agent", "sarah", "start", "codex", "--folder", str(project),
               "--prompt", "hi")
    assert done.code == 1 and "failed" in done.out
    assert [e["outcome"] for e in log(root)] == ["failed"]


@pytest.mark.parametrize(("name", "why"), [("all", "reserved"), ("_x", "reserved"),
                                           ("-x", "not valid"), ("gemini", "already an agent"),
                                           ("ghost", "sender")])
def test_register_as_refusals_start_nothing(box: Box, root: Path, bin_dir: Path,
                                            project: Path, name: str, why: str) -> None:
    record = fake_host(bin_dir, "codex")
    launch(root)
    box("ghost").send("claude", "hello", "body")  # ghost: a sender with no mailbox
    config = FileStore(root).load_config()
    put_config(FileStore(root), {**config, "agents": {"gemini": {}}})
    with pytest.raises((Refused, InvalidInput), match=why):
        start(box("orchestrator"), Request("codex", str(project), "hi", register_as=name),
              via="mcp")
    assert not calls(record) and not log(root)


def test_max_running_counts_live_started_sessions(box: Box, root: Path, bin_dir: Path,
                                                  project: Path, started_pids: list[int]
                                                  ) -> None:
    record = fake_host(bin_dir, "codex", hang_first=True)
    launch(root, max_running=1)
    first = start(box("orchestrator"), Request("codex", str(project), "one"), via="mcp")
    assert first.pid is not None
    started_pids.append(first.pid)
    with pytest.raises(Refused, match="1 started sessions are running"):
        start(box("orchestrator"), Request("codex", str(project), "two"), via="mcp")
    wait_until(lambda: calls(record), what="the first start")
    os.killpg(first.pid, signal.SIGKILL)

    def again() -> bool:
        try:
            start(box("orchestrator"), Request("codex", str(project), "three"), via="mcp")
        except Refused:
            return False
        return True

    wait_until(again, what="a slot once the first ended")


HANGING_HOST = """#!{python}
# A fake host that records its start, then runs until it is ended (a live session).
import json, os, sys, time
fd = os.open({record!r}, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
os.write(fd, (json.dumps({{"argv": sys.argv[1:], "pid": os.getpid()}}) + "\\n").encode())
os.close(fd)
time.sleep(600)
"""
AT_ONCE = """
import os, sys
from mailslot import entry  # and all a start imports, before the wait
from mailslot.frontends.cli import main
from mailslot.launch import guardrails, starting
ready, go = int(sys.argv[1]), int(sys.argv[2])
os.write(ready, b".")
os.read(go, 1)
sys.argv[1:] = sys.argv[3:]
sys.exit(entry.main())
"""
"""One ``mailslot`` run, imported and held until the test lets every run go at once."""
FULL = ("1 started sessions are running (config.json: launch.max_running); wait for one "
        "to end")


def hanging_host(bin_dir: Path, name: str) -> Path:
    record = bin_dir / f"{name}.jsonl"
    program = bin_dir / name
    program.write_text(HANGING_HOST.format(python=sys.executable, record=str(record)))
    program.chmod(0o755)
    return record


def run_at_once(runs: list[list[str]]) -> list[subprocess.CompletedProcess[str]]:
    """Each argv as ``mailslot ARGV`` in its own process, all let go at the same moment
    once every one has started and imported mailslot."""
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    procs = [subprocess.Popen([sys.executable, "-c", AT_ONCE, str(ready_w), str(go_r), *argv],
                              pass_fds=(ready_w, go_r), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for argv in runs]
    os.close(ready_w)
    os.close(go_r)
    try:
        waiting = b""
        while len(waiting) < len(procs):
            readable, _, _ = select.select([ready_r], [], [], 120)
            chunk = os.read(ready_r, len(procs)) if readable else b""
            assert chunk, "a run ended before it was ready"
            waiting += chunk
        os.write(go_w, b"." * len(procs))
        outs = [p.communicate(timeout=120) for p in procs]
    finally:
        for fd in (ready_r, go_w):
            os.close(fd)
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return [subprocess.CompletedProcess(p.args, p.returncode, out, err)
            for p, (out, err) in zip(procs, outs, strict=True)]


def test_max_running_holds_for_starts_run_at_once_by_four_processes(
        root: Path, bin_dir: Path, project: Path, started_pids: list[int]) -> None:
    hanging_host(bin_dir, "codex")
    launch(root, max_running=1)
    try:
        done = run_at_once([["start", "codex", "--folder", str(project), "--prompt", f"job {n}"]
                            for n in range(4)])
    finally:
        started_pids.extend(r["pid"] for r in log(root) if isinstance(r.get("pid"), int))
    assert sorted(d.returncode for d in done) == [0, 1, 1, 1], [d.stderr for d in done]
    assert sorted(d.stderr for d in done if d.returncode) == [f"mailslot: error: {FULL}\n"] * 3
    assert [r["outcome"] for r in log(root)] == ["background"]


def test_one_name_given_by_starts_run_at_once_is_taken_by_one_of_them(
        root: Path, bin_dir: Path, project: Path, started_pids: list[int]) -> None:
    record = hanging_host(bin_dir, "codex")
    launch(root)
    try:
        done = run_at_once([["start", "codex", "--folder", str(project), "--prompt", f"job {n}",
                             "--register-as", "builder"] for n in range(3)])
    finally:
        started_pids.extend(r["pid"] for r in log(root) if isinstance(r.get("pid"), int))
    assert sorted(d.returncode for d in done) == [0, 1, 1], [d.stderr for d in done]
    assert sorted(d.stderr for d in done if d.returncode) == [
        "mailslot: error: register_as 'builder' is already an agent\n"] * 2
    assert [r["register_as"] for r in log(root)] == ["builder"]
    assert len(wait_until(lambda: calls(record), what="the one start")) == 1


def test_max_running_holds_for_pipelined_start_session_calls(
        root: Path, bin_dir: Path, project: Path, started_pids: list[int]) -> None:
    hanging_host(bin_dir, "codex")
    launch(root, max_running=1)
    calls_at_once = [{"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {
        "name": "start_session",
        "arguments": {"host": "codex", "folder": str(project), "prompt": f"job {n}"}}}
        for n in range(2, 8)]
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "pipelined", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"}, *calls_at_once]
    answers = {}
    with subprocess.Popen([sys.executable, "-m", "mailslot", "--agent", "orchestrator",
                           "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True) as server:
        assert server.stdin is not None and server.stdout is not None
        try:
            server.stdin.write("".join(json.dumps(line) + "\n" for line in lines))
            server.stdin.flush()  # every call sent before the first answer
            while len(answers) < 7:
                answer = json.loads(server.stdout.readline())
                answers[answer["id"]] = answer["result"]
        finally:
            server.kill()
            started_pids.extend(r["pid"] for r in log(root) if isinstance(r.get("pid"), int))
    results = [answers[n] for n in range(2, 8)]
    assert sorted(bool(r.get("isError")) for r in results) == [False] + [True] * 5
    assert [r["content"][0]["text"] for r in results if r.get("isError")] == [FULL] * 5
    assert [r["outcome"] for r in log(root)] == ["background"]


FAKE_TUI = """#!{python}
import json, os, sys
with open({record!r}, "a") as f:
    f.write(json.dumps({{"argv": sys.argv[1:], "env": dict(os.environ),
                        "cwd": os.getcwd()}}) + "\\n")
while True:
    try:
        line = input("agent> ")
    except EOFError:
        break
    with open({record!r} + ".lines", "a") as f:
        f.write(line + "\\n")
"""


def tmux_claude(bin_dir: Path, monkeypatch: pytest.MonkeyPatch, kind: str
                ) -> tuple[str, Path]:
    """A fake interactive ``claude`` (it records its start, then reads lines) and the
    name of a private tmux server for it."""
    monkeypatch.delenv("TMUX", raising=False)
    record = bin_dir / "claude.jsonl"
    program = bin_dir / "claude"
    program.write_text(FAKE_TUI.format(python=sys.executable, record=str(record)))
    program.chmod(0o755)
    return f"mailslot-{kind}-{uuid.uuid4().hex[:10]}", record


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_tmux_handoff_opens_a_window_that_a_wake_reaches(
        box: Box, root: Path, bin_dir: Path, project: Path, isolated: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    socket, record = tmux_claude(bin_dir, monkeypatch, "launch")
    launch(root, tmux_socket=socket, claude={"tmux_program": Path(sys.executable).name})
    canary = isolated / "pwned"
    try:
        result = start(box("orchestrator"), Request(
            "claude", str(project), f"go; touch {canary}", name="-t evil; rm -rf /",
            handoff="tmux", register_as="builder-2"), via="mcp")
        seen = one_call(record)
        assert seen["argv"][-1].endswith(f"go; touch {canary}") and not canary.exists()
        assert seen["env"]["MAILSLOT_AGENT"] == "builder-2" and seen["cwd"] == str(project)
        windows = subprocess.run(["tmux", "-L", socket, "list-windows", "-a", "-F",
                                  "#{window_name}|#{pane_id}"], capture_output=True,
                                 text=True, check=True).stdout
        assert f"-t evil; rm -rf /|{result.tmux_target}" in windows
        assert result.outcome == "handed_off" and result.pid
        agent = FileStore(root).load_config()["agents"]["builder-2"]
        assert (agent["wake_method"], agent["tmux_target"], agent["tmux_socket"]) == (
            "tmux", result.tmux_target, socket)
        message = box("orchestrator").send("builder-2", "Done?", "status please")
        woke = subprocess.run([sys.executable, "-m", "mailslot", "watch", "--once"],
                              capture_output=True, text=True, timeout=60)
        assert woke.returncode == 0, woke.stderr
        lines = wait_until(lambda: Path(f"{record}.lines").exists()
                           and Path(f"{record}.lines").read_text(), what="the wake notice")
        assert message.id in lines
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)


@pytest.mark.parametrize("via", ["mcp", "cli"])
def test_a_child_agent_may_never_start_a_session(root: Path, bin_dir: Path, project: Path,
                                                 via: str) -> None:
    from mailslot.access.identity import Identity

    record = fake_host(bin_dir, "codex")
    launch(root, allowed_callers=["kid"])
    child = Mailbox(FileStore(root), Identity("kid", "--agent"), peer_of="orchestrator")
    with pytest.raises(Refused, match="child agent"):
        start(child, Request("codex", str(project), "hi"), via=via)
    assert not calls(record) and not log(root)


@pytest.mark.parametrize(("name", "why"), [
    ("sarah", "the owner"), ("Sarah", "the owner"), ("orchestrator", "allowed_callers"),
    ("planner", "allowed_callers"), ("live", "a session"), ("hooked", "a session"),
    ("earlier", "a session")])
def test_register_as_never_takes_the_owner_a_caller_or_a_sessions_name(
        box: Box, root: Path, bin_dir: Path, project: Path, name: str, why: str) -> None:
    record = fake_host(bin_dir, "codex")
    launch(root, allowed_callers=["orchestrator", "Planner"])
    store = FileStore(root)
    box("live").beacon(program="claude").announce()  # a server of "live" is online
    store.record_hook_session("hooked", "s-1", {"host": "claude"})
    store.log_session({"launcher": "codex", "outcome": "background", "pid": os.getpid(),
                       "register_as": "earlier"})  # a started session, still running
    before = store.load_config()
    with pytest.raises(Refused, match=why):
        start(box("orchestrator"), Request("codex", str(project), "hi", register_as=name),
              via="mcp")
    assert not calls(record) and len(log(root)) == 1
    assert store.load_config() == before


def test_register_as_a_registered_agent_is_refused(box: Box, root: Path,
                                                   project: Path, isolated: Path) -> None:
    from mailslot.access import authority

    launch(root)
    authority.register(FileStore(root), "builder", path=str(isolated / "builder.cred"))
    with pytest.raises(Refused, match="already an agent"):
        start(box("orchestrator"), Request("codex", str(project), "hi",
                                           register_as="builder"), via="mcp")


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
@pytest.mark.parametrize("opted_in", [True, False])
def test_recovery_starts_a_gone_agent_once_and_only_when_opted_in(
        box: Box, root: Path, bin_dir: Path, project: Path, monkeypatch: pytest.MonkeyPatch,
        opted_in: bool) -> None:
    socket, record = tmux_claude(bin_dir, monkeypatch, "restart")
    agent: dict[str, Any] = {"wake_on_mail": True, "wake_method": "tmux", "tmux_target": "%999",
                             "tmux_program": Path(sys.executable).name,
                             "tmux_socket": socket, "tmux_idle_seconds": 0.3}
    if opted_in:
        agent["restart"] = {"host": "claude", "folder": str(project), "continue": True,
                            "handoff": "tmux"}
    configure(root, {"builder": agent})

    def watch_once() -> str:
        done = subprocess.run([sys.executable, "-m", "mailslot", "watch", "--once"],
                              capture_output=True, text=True, timeout=60)
        return done.stdout + done.stderr

    lines = Path(f"{record}.lines")
    try:
        first = box("orchestrator").send("builder", "wake up", "one")
        out = watch_once()
        if not opted_in:
            assert not calls(record) and "was not found" in out and not log(root)
            return
        (seen,) = calls(record)
        assert seen["argv"][:2] == ["--continue", "--permission-mode=default"]
        assert own_server(seen["argv"]) == ["serve", "--agent", "builder", "--dir", str(root)]
        assert seen["env"]["MAILSLOT_AGENT"] == "builder" and seen["cwd"] == str(project)
        wait_until(lambda: lines.exists() and first.id in lines.read_text(), 60,
                   what="the wake")
        (entry,) = log(root)
        assert entry["via"] == "watch" and entry["outcome"] == "handed_off"
        assert FileStore(root).load_config()["agents"]["builder"]["tmux_target"] == entry[
            "tmux_target"]
        second = box("orchestrator").send("builder", "again", "two")
        watch_once()
        wait_until(lambda: second.id in lines.read_text(), 60, what="the second wake")
        assert len(calls(record)) == 1 and len(log(root)) == 1  # started once
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)


# ---- each started session's own MCP server, and a clean environment --

HOSTILE = "#(cd; touch pwned-{})"
"""A tmux format that runs a shell command (in ``$HOME``, so it needs no ``/``)."""


def tmux_windows(socket: str) -> str:
    """Every pane of the private server: ``pane_id|window_name``, one a line."""
    return subprocess.run(["tmux", "-L", socket, "list-windows", "-a", "-F",
                           "#{pane_id}|#{window_name}"], capture_output=True, text=True,
                          check=True).stdout


def pwned(isolated: Path) -> list[str]:
    return sorted(p.name for p in (isolated / "home").glob("pwned-*"))


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
@pytest.mark.parametrize("via", ["mcp", "cli"])
def test_tmux_formats_in_a_name_or_folder_run_nothing_and_the_window_is_in_that_folder(
        box: Box, root: Path, bin_dir: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch,
        via: str) -> None:
    socket, record = tmux_claude(bin_dir, monkeypatch, "formats")
    folder = isolated / f"work #{{session_name}} {HOSTILE.format('folder')}"
    folder.mkdir()
    (isolated / "home" / ".claude.json").write_text(json.dumps(
        {"projects": {str(folder): {"hasTrustDialogAccepted": True}}}))
    name = f"{HOSTILE.format('name')} #{{pane_id}} ## #"
    launch(root, tmux_socket=socket)
    try:
        result = start(box("orchestrator" if via == "mcp" else None), Request(
            "claude", str(folder), "hi", name=name, handoff="tmux"), via=via)
        assert result.outcome == "handed_off", result.error
        seen = one_call(record)
        windows = tmux_windows(socket)
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
    assert seen["cwd"] == str(folder)
    assert f"{result.tmux_target}|{name}\n" in windows
    assert pwned(isolated) == []


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_recovery_runs_no_tmux_format_in_its_folder(
        box: Box, root: Path, bin_dir: Path, isolated: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    socket, record = tmux_claude(bin_dir, monkeypatch, "formats-restart")
    folder = isolated / f"app {HOSTILE.format('restart')}"
    folder.mkdir()
    configure(root, {"builder": {
        "wake_on_mail": True, "wake_method": "tmux", "tmux_target": "%999",
        "tmux_program": Path(sys.executable).name, "tmux_socket": socket,
        "tmux_idle_seconds": 0.3,
        "restart": {"host": "claude", "folder": str(folder), "continue": True,
                    "handoff": "tmux"}}})
    try:
        box("orchestrator").send("builder", "wake up", "one")
        subprocess.run([sys.executable, "-m", "mailslot", "watch", "--once"],
                       capture_output=True, text=True, timeout=60, check=False)
        seen = one_call(record)
        (entry,) = log(root)
        windows = tmux_windows(socket)
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
    assert seen["cwd"] == str(folder)
    assert f"{entry['tmux_target']}|builder\n" in windows
    assert pwned(isolated) == []


def test_recovery_into_a_folder_that_is_gone_starts_nothing_elsewhere(
        box: Box, root: Path, bin_dir: Path, isolated: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from mailslot.launch.restart import recover
    from mailslot.wake.runner import WakeRunner

    socket, record = tmux_claude(bin_dir, monkeypatch, "gone")
    gone = isolated / "gone"
    configure(root, {"builder": {
        "wake_on_mail": True, "wake_method": "tmux", "tmux_target": "%999",
        "tmux_program": "claude", "tmux_socket": socket,
        "restart": {"host": "claude", "folder": str(gone), "continue": True,
                    "handoff": "tmux"}}}, wake_retry={"attempts": 1})
    box("orchestrator").send("builder", "wake up", "one")
    try:
        done = WakeRunner(FileStore(root), recover=recover).run_agent("builder").results
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
    assert done[0].outcome.reason == (f"could not start builder again: the folder {gone} "
                                      "does not exist")
    assert not calls(record) and not log(root)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_recovery_opens_its_window_on_the_server_of_tmux_socket_path(
        box: Box, root: Path, bin_dir: Path, project: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    _, record = tmux_claude(bin_dir, monkeypatch, "socket-path")
    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path))  # the default server: private too
    path = tmp_path / "agents.sock"
    configure(root, {"builder": {
        "wake_on_mail": True, "wake_method": "tmux", "tmux_target": "%999",
        "tmux_program": Path(sys.executable).name, "tmux_socket_path": str(path),
        "tmux_idle_seconds": 0.3,
        "restart": {"host": "claude", "folder": str(project), "continue": True,
                    "handoff": "tmux"}}})
    servers = (["-S", str(path)], [])
    try:
        sent = box("orchestrator").send("builder", "wake up", "one")
        subprocess.run([sys.executable, "-m", "mailslot", "watch", "--once"],
                       capture_output=True, text=True, timeout=60, check=False)
        (entry,) = log(root)
        panes = [subprocess.run(["tmux", *server, "list-panes", "-a", "-F", "#{pane_id}"],
                                capture_output=True, text=True, check=False).stdout.split()
                 for server in servers]
        lines = Path(f"{record}.lines")
        wait_until(lambda: lines.exists() and sent.id in lines.read_text(), 60,
                   what="the wake")
    finally:
        for server in servers:
            subprocess.run(["tmux", *server, "kill-server"], capture_output=True, check=False)
    assert panes == [[entry["tmux_target"]], []]


def test_register_as_gives_each_host_its_own_server_speaking_as_that_name(
        box: Box, root: Path, bin_dir: Path, project: Path) -> None:
    """The folder's installed server may name another agent (`--agent` beats
    MAILSLOT_AGENT), so each host is given a `mailslot` server of the session's own."""
    launch(root, copilot={"allow_tools": ["mailslot", "shell(git:*)"]})
    seen: dict[str, dict[str, Any]] = {}
    for host in ("claude", "codex", "copilot"):
        record = fake_host(bin_dir, host)
        start(box("orchestrator"), Request(host, str(project), "hi", register_as=f"b-{host}"),
              via="mcp")
        seen[host] = one_call(record)
    assert own_server(seen["claude"]["argv"][:-2]) == [
        "serve", "--agent", "b-claude", "--dir", str(root)]
    codex = seen["codex"]["argv"]
    args = "mcp_servers.mailslot.args=" + json.dumps(
        ["serve", "--agent", "b-codex", "--dir", str(root)])
    assert codex[codex.index(args) - 1] == "-c" and codex.index("--") > codex.index(args)
    (copilot,) = [a for a in seen["copilot"]["argv"] if a.startswith("--additional-mcp-config=")]
    server = json.loads(copilot.partition("=")[2])["mcpServers"]["mailslot"]
    assert server["args"] == ["serve", "--agent", "b-copilot", "--dir", str(root)]
    assert "--allow-tool=shell(git:*)" in seen["copilot"]["argv"]
    agents = FileStore(root).load_config()["agents"]
    assert agents["b-copilot"]["wake_method"] == "copilot"
    assert agents["b-copilot"]["allow_tools"] == ["mailslot", "shell(git:*)"]
    assert agents["b-claude"]["own_server"] and agents["b-copilot"]["own_server"]


def test_without_register_as_no_server_is_added(box: Box, root: Path, bin_dir: Path,
                                                project: Path) -> None:
    record = fake_host(bin_dir, "claude")
    launch(root)
    start(box("orchestrator"), Request("claude", str(project), "hi"), via="mcp")
    assert own_server(one_call(record)["argv"]) is None


def test_gemini_register_as_is_refused_where_the_folder_names_another_agent(
        box: Box, root: Path, bin_dir: Path, project: Path) -> None:
    """Gemini has no per-session MCP settings: a folder whose server is bound to another
    agent would make the session speak as that agent, so nothing starts."""
    record = fake_host(bin_dir, "gemini")
    launch(root, gemini={"default_model": "gemini-2.5-flash"})
    settings = project / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"mcpServers": {"mailslot": {
        "command": "mailslot", "args": ["serve", "--agent", "folder-default"]}}}))
    with pytest.raises(Refused, match="registers mailslot as agent 'folder-default'"):
        start(box("orchestrator"), Request("gemini", str(project), "hi", register_as="g"),
              via="mcp")
    assert not calls(record) and not log(root)
    settings.write_text(json.dumps({"mcpServers": {"mailslot": {
        "command": "mailslot", "args": ["serve"]}}}))  # reads MAILSLOT_AGENT: accepted
    start(box("orchestrator"), Request("gemini", str(project), "hi", register_as="g"),
          via="mcp")
    assert one_call(record)["env"]["MAILSLOT_AGENT"] == "g"


@pytest.mark.parametrize("handoff", ["background", "tmux"])
def test_the_callers_own_mailslot_environment_never_reaches_the_session(
        box: Box, root: Path, bin_dir: Path, project: Path, isolated: Path,
        monkeypatch: pytest.MonkeyPatch, handoff: str) -> None:
    if handoff == "tmux" and shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    if handoff == "tmux":  # a fake that reads its terminal, as the real one does
        socket, record = tmux_claude(bin_dir, monkeypatch, "env")
    else:
        socket, record = "unused", fake_host(bin_dir, "claude")
    launch(root, tmux_socket=socket)
    orchestrator = box("orchestrator")
    leaked = {"MAILSLOT_AGENT": "orchestrator", "MAILSLOT_PEER_OF": "orchestrator",
              "MAILSLOT_CREDENTIAL": str(isolated / "cred.json"),
              "MAILSLOT_STORE": str(isolated / "elsewhere")}
    for key, value in leaked.items():
        monkeypatch.setenv(key, value)
    try:
        if handoff == "tmux":  # a server started with the caller's environment
            subprocess.run(["tmux", "-L", socket, "new-session", "-d", "-s", "other",
                            "sleep", "600"], check=True)
        done = start(orchestrator, Request("claude", str(project), "hi", handoff=handoff),
                     via="mcp")
        assert done.outcome != "failed", done.error
        env = one_call(record)["env"]
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
    assert env["MAILSLOT_DIR"] == str(root)
    assert all(not env.get(key) for key in leaked), {k: env.get(k) for k in leaked}


def test_copilot_wake_resumes_the_session_with_its_own_server(
        root: Path, bin_dir: Path, project: Path) -> None:
    from mailslot.wake.methods import Job
    from mailslot.wake.methods_by_name import method_for

    record = fake_host(bin_dir, "copilot")
    cfg = {"wake_method": "copilot", "session_id": "abc-1", "cwd": str(project),
           "own_server": True, "executable": str(bin_dir / "copilot"),
           "allow_tools": ["mailslot"]}
    method = method_for("builder", "copilot").from_config("builder", cfg)
    message = Mailbox(FileStore(root), None).store  # only its location is read
    job = Job("builder", (), "-you have mail", message, 30)
    assert method.wake(job).ok
    argv = one_call(record)["argv"]
    assert argv[:3] == ["--resume=abc-1", "--allow-tool=mailslot", "--prompt=-you have mail"]
    assert any(a.startswith("--additional-mcp-config=") and '"builder"' in a for a in argv)
    with pytest.raises(StoreError, match="allow_tools"):
        method_for("builder", "copilot").from_config(
            "builder", {**cfg, "allow_tools": ["--allow-all-tools"]})


def test_a_failed_recovery_start_is_retried_once_then_the_sender_is_told(
        box: Box, root: Path, project: Path, isolated: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from mailslot.launch.restart import recover
    from mailslot.wake.runner import WakeRunner
    from wake_helpers import events

    configure(root, {"builder": {
        "wake_on_mail": True, "wake_method": "tmux", "tmux_target": "%999",
        "tmux_program": "claude",
        "restart": {"host": "claude", "folder": str(project), "continue": True,
                    "handoff": "tmux"}}},
        wake_retry={"attempts": 5, "backoff_seconds": 5, "backoff_factor": 1})
    empty = isolated / "no-tmux-here"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # tmux cannot be run: every start fails
    sent = box("orchestrator").send("builder", "wake up", "one")
    now = [time.time() + 1]
    runner = WakeRunner(FileStore(root), clock=lambda: now[0], recover=recover)
    first = runner.run_agent("builder").results
    assert first[0].retry_in == 5 and first[0].told is None
    now[0] += 5
    second = runner.run_agent("builder").results
    assert second[0].told == "orchestrator" and runner.run_agent("builder").next_due is None
    failed = [e for e in events(root) if e["event"] == "wake_failed"]
    assert [(e["attempt"], e["final"]) for e in failed] == [(1, False), (2, True)]
    assert failed[0]["reason"].startswith("could not start builder again: tmux")
    notices = box("orchestrator").store.entries("orchestrator", ("unread",))
    assert any(sent.id in json.dumps(box("orchestrator").read(i).as_dict(with_body=True))
               for i, _ in notices)
    assert not log(root)  # nothing started, nothing logged as started


def test_desktop_handoff_is_refused_in_one_line_where_the_app_is_absent(
        box: Box, root: Path, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("mailslot.hosts.claude.Claude.desktop_opener", lambda self: None)
    launch(root)
    with pytest.raises(Refused, match="needs the Claude desktop app") as refused:
        start(box("orchestrator"), Request("claude", str(project), "hi", handoff="desktop"),
              via="mcp")
    assert "\n" not in str(refused.value) and not log(root)


def test_desktop_handoff_opens_a_claude_link_with_the_prompt_prefilled(
        box: Box, root: Path, bin_dir: Path, project: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from urllib.parse import parse_qs, urlsplit

    record = fake_host(bin_dir, "opener")
    monkeypatch.setattr("mailslot.hosts.claude.Claude.desktop_opener",
                        lambda self: [str(bin_dir / "opener")])
    launch(root)
    with pytest.raises(InvalidInput, match="cannot carry register_as"):
        start(box("orchestrator"), Request("claude", str(project), "hi", handoff="desktop",
                                           register_as="d"), via="mcp")
    result = start(box("orchestrator"), Request(
        "claude", str(project), "fix it & --dangerously-skip-permissions", handoff="desktop"),
        via="mcp")
    (link,) = one_call(record)["argv"]
    parts = urlsplit(link)
    assert (parts.scheme, parts.netloc, parts.path) == ("claude", "code", "/new")
    query = parse_qs(parts.query)
    assert query["folder"] == [str(project)]
    assert query["q"][0].startswith("[mailslot] This prompt came from agent orchestrator")
    assert query["q"][0].endswith("fix it & --dangerously-skip-permissions")
    assert result.outcome == "handed_off" and result.pid is None
    (entry,) = log(root)
    assert entry["handoff"] == "desktop" and entry["outcome"] == "handed_off"
