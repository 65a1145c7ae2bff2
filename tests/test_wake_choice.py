"""``install HOST --wake`` chooses the wake from the host's ladder, and ``doctor --wake``
shows it: fake host programs on PATH print a version, a private tmux server gives the
pane, and every choice is checked in config.json."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import Result
from mailslot import host_registry as hosts
from mailslot.backends import open_store
from mailslot.wake.choice import probe, setup_for
from mailslot.wake.methods_by_name import find_method
from support import fake_program

Cli = Callable[..., Result]


def config(root: Path) -> dict[str, Any]:
    path = root / "config.json"
    return dict(json.loads(path.read_text())) if path.exists() else {}


def agent_entry(root: Path, agent: str = "ada") -> dict[str, Any]:
    return dict(config(root).get("agents", {}).get(agent, {}))


def put_entry(root: Path, entry: dict[str, Any], agent: str = "ada") -> None:
    root.mkdir(exist_ok=True)
    (root / "config.json").write_text(json.dumps({"agents": {agent: entry}}))


def install(cli: Cli, host: str, *options: str) -> Result:
    return cli("--agent", "ada", "install", host, *options)


def ladder(host: str, root: Path, *, hooks: bool, entry: dict[str, Any] | None = None,
           env: dict[str, str] | None = None) -> list[tuple[str, bool, str]]:
    store = open_store(str(root))
    store.init()
    setup = setup_for(store, entry or {}, "ada", hosts.host(host), folder="/work",
                      hooks=hooks, env=env if env is not None else dict(os.environ))
    return [(s.method, s.ok, s.said) for s in probe(hosts.host(host), setup).steps]


def test_every_ladder_names_wake_methods_that_exist() -> None:
    for host in hosts.every():
        for rung in host.wake_ladder:
            assert find_method(rung.method) is not None, (host, rung)
            assert not rung.waiter or host.wake_hook, (host, rung)


@pytest.mark.parametrize("host, first", [
    ("claude", "claude-peer"), ("codex", "codex-queue"), ("gemini", "tmux"),
    ("copilot", "tmux"), ("grok", "tmux"), ("antigravity", "agentapi")])
def test_each_ladder_starts_with_its_best_way_in(host: str, first: str) -> None:
    assert hosts.host(host).wake_ladder[0].method == first


@pytest.mark.parametrize("host, resume", [
    ("claude", "claude"), ("codex", "codex"), ("gemini", "gemini"), ("copilot", "copilot"),
    ("grok", "grok")])
def test_program_absent_nothing_passes_but_your_own_command(
        host: str, resume: str, root: Path, bin_dir: Path) -> None:
    steps = dict((m, (ok, said)) for m, ok, said in ladder(host, root, hooks=True))
    assert steps[resume] == (False, f"{resume} is not on PATH")
    assert not any(ok for ok, _ in steps.values())
    fake_program(bin_dir, "notify-me")
    mine = ladder(host, root, hooks=True, entry={"command": ["notify-me", "{id}"]})
    assert [m for m, ok, _ in mine if ok] == ["command"]


@pytest.mark.parametrize("version, chosen", [
    ("2.1.224 (Claude Code)", "claude-peer"), ("2.1.332 (Claude Code)", "claude-peer"),
    ("2.1.223 (Claude Code)", "claude-rewake"), ("2.1.197 (Claude Code)", "claude-rewake"),
    ("2.1.196 (Claude Code)", "claude"), ("1.0.9", "claude")])
def test_claude_version_decides_between_the_door_the_waiter_and_a_resumed_turn(
        version: str, chosen: str, root: Path, bin_dir: Path) -> None:
    fake_program(bin_dir, "claude", version)
    steps = ladder("claude", root, hooks=True)
    assert next(m for m, ok, _ in steps if ok) == chosen
    peer, rewake = steps[0], steps[1]
    if chosen != "claude-peer":
        assert peer == ("claude-peer", False,
                        f"Claude Code {version.split()[0]} is older than 2.1.224")
    if chosen == "claude":
        assert rewake == ("claude-rewake", False,
                          f"Claude Code {version.split()[0]} is older than 2.1.197")


def test_a_version_that_cannot_be_read_passes_no_step_that_needs_one(
        root: Path, bin_dir: Path) -> None:
    fake_program(bin_dir, "claude", None)  # --version fails
    steps = ladder("claude", root, hooks=True)
    assert steps[0] == ("claude-peer", False,
                        "the version of claude could not be read (needs 2.1.224 or later)")
    assert steps[1] == ("claude-rewake", False,
                        "the version of claude could not be read (needs 2.1.197 or later)")
    assert steps[3][:2] == ("claude", True)  # a resume needs no version


@pytest.mark.parametrize("version, chosen", [("codex-cli 0.171.0", "codex-queue"),
                                             ("codex-cli 0.172.3", "codex-queue"),
                                             ("codex-cli 0.99.0", "codex")])
def test_codex_queue_needs_its_version(version: str, chosen: str, root: Path,
                                       bin_dir: Path) -> None:
    fake_program(bin_dir, "codex", version)
    assert next(m for m, ok, _ in ladder("codex", root, hooks=True) if ok) == chosen


def test_the_waiter_needs_hooks_and_a_resume_needs_a_session(root: Path,
                                                             bin_dir: Path) -> None:
    fake_program(bin_dir, "claude", "2.1.332")
    steps = ladder("claude", root, hooks=False)
    assert steps[0] == ("claude-peer", False, "needs --hooks: its background waiter is a hook")
    assert steps[1] == ("claude-rewake", False, "needs --hooks: its background waiter is a hook")
    assert steps[3] == ("claude", False, "no session id: set config.json: "
                        "agents.ada.session_id, or install with --hooks so they record the latest")
    named = ladder("claude", root, hooks=False, entry={"session_id": "abc-123"})
    assert named[3] == ("claude", True, "session abc-123, as configured")


def test_a_host_without_hooks_never_gets_latest(root: Path, bin_dir: Path) -> None:
    """Kilo has no hooks, so nothing records its latest session: only a given id."""
    fake_program(bin_dir, "kilo", "7.7.7")
    host = hosts.host("kilo")
    steps = {s.method: s for s in probe(host, setup_for(
        open_store(str(root)), {}, "ada", host, folder="/w", hooks=True, env={})).steps}
    if "kilo" in steps:  # once its ladder names its resume
        assert not steps["kilo"].ok and "no session id" in steps["kilo"].said


def test_zcode_can_be_reached_only_at_its_hooks(cli: Cli, root: Path, project: Path) -> None:
    r = install(cli, "zcode", "--hooks", "--wake")
    assert r.code == 2
    assert r.err.startswith("mailslot: error: ZCode cannot be woken: it can be reached only "
                            "at its hooks")
    assert r.err.count("\n") == 1 and "install it without --wake" in r.err
    assert not any(project.iterdir()) and config(root) == {}


@pytest.fixture
def project(isolated: Path) -> Path:
    return isolated / "work"


def test_install_writes_the_chosen_method_and_its_fields(cli: Cli, root: Path,
                                                         project: Path, bin_dir: Path) -> None:
    fake_program(bin_dir, "gemini", "0.61.0")
    r = install(cli, "gemini", "--hooks", "--wake")
    assert r.code == 0, r.err
    assert agent_entry(root) == {"wake_on_mail": True, "wake_method": "gemini",
                                 "session_id": "latest", "cwd": str(project)}
    assert ('wake: gemini, chosen: session "latest": its hooks record it at the next '
            "session start; set agents.ada.wake_method \"gemini\" with wake_on_mail, "
            "session_id, cwd in") in r.out


def test_install_keeps_what_the_owner_set(cli: Cli, root: Path, bin_dir: Path) -> None:
    fake_program(bin_dir, "copilot", "1.0.102")
    put_entry(root, {"wake_on_mail": "requested", "session_id": "s-1", "cwd": "/elsewhere",
                     "allow_tools": ["mailslot"], "note": "mine"})
    assert install(cli, "copilot", "--wake").code == 0
    assert agent_entry(root) == {"wake_on_mail": "requested", "wake_method": "copilot",
                                 "session_id": "s-1", "cwd": "/elsewhere",
                                 "allow_tools": ["mailslot"], "note": "mine"}


def test_a_refused_wake_writes_nothing(cli: Cli, root: Path, project: Path) -> None:
    r = install(cli, "gemini", "--hooks", "--wake")
    assert r.code == 2 and r.err.count("\n") == 1
    assert ("no wake is possible for Gemini CLI here: tmux: not run inside tmux "
            "($TMUX_PANE is not set)") in r.err
    assert "gemini: gemini is not on PATH" in r.err and "nothing was changed" in r.err
    assert not any(project.iterdir()) and config(root) == {}


def test_dry_run_says_the_choice_and_writes_nothing(cli: Cli, root: Path,
                                                    bin_dir: Path) -> None:
    fake_program(bin_dir, "codex", "codex-cli 0.171.0")
    r = install(cli, "codex", "--hooks", "--wake", "--dry-run")
    assert r.code == 0, r.err
    assert 'wake: codex-queue, chosen: Codex CLI 0.171.0 (≥ 0.171.0); session "latest"' in r.out
    assert 'would set agents.ada.wake_method "codex-queue"' in r.out
    assert config(root) == {}


class Tmux:
    """A private tmux server, killed at the end of the test."""

    def __init__(self) -> None:
        self.socket = f"mailslot-choice-{uuid.uuid4().hex[:12]}"

    def __call__(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args],
                              capture_output=True, text=True, check=True, timeout=60).stdout


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    server = Tmux()
    yield server
    subprocess.run(["tmux", "-L", server.socket, "kill-server"], capture_output=True,
                   check=False)


def test_in_tmux_the_pane_install_runs_in_is_chosen(
        cli: Cli, root: Path, tmux: Tmux, monkeypatch: pytest.MonkeyPatch,
        bin_dir: Path) -> None:
    pane = tmux("new-session", "-d", "-s", "t", "-P", "-F", "#{pane_id}", "sleep 600").strip()
    path = tmux("display-message", "-p", "-t", pane, "#{socket_path}").strip()
    monkeypatch.setenv("TMUX", f"{path},1,0")
    monkeypatch.setenv("TMUX_PANE", pane)
    fake_program(bin_dir, "gemini", "0.61.0")
    r = install(cli, "gemini", "--hooks", "--wake")
    assert r.code == 0, r.err
    assert agent_entry(root) == {"wake_on_mail": True, "wake_method": "tmux",
                                 "tmux_target": pane, "tmux_socket_path": path,
                                 "tmux_program": "gemini"}
    assert f"wake: tmux, chosen: pane {pane}: types the notice when gemini" in r.out
    monkeypatch.setenv("TMUX_PANE", "%999")  # a pane that is not there
    steps = ladder("gemini", root, hooks=True, env=dict(os.environ), entry={})
    assert steps[0] == ("tmux", False, "tmux pane %999 was not found")


# doctor --wake ----------------------------------------------------------------------
def test_doctor_shows_the_configured_wake_and_the_ladder(cli: Cli, root: Path,
                                                         bin_dir: Path) -> None:
    fake_program(bin_dir, "codex", "codex-cli 0.171.0")
    assert install(cli, "codex", "--hooks", "--wake").code == 0
    r = cli("doctor", "--wake", "ada")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0] == "ada: woken for every directed message; wake_method: codex-queue"
    assert lines[1] == "  probe: nothing wrong is visible now"
    assert lines[2] == "ladder of Codex CLI 0.171.0 (install --wake takes the first ✓):"
    assert lines[3].startswith("  1. ✓ codex-queue (configured) ← chosen: Codex CLI 0.171.0")
    assert lines[4].startswith("  2. ✗ tmux: not run inside tmux")
    assert lines[5].startswith("  3. ✓ codex: session")
    assert lines[6].startswith("  4. ✗ command: no config.json: agents.ada.command")
    data = json.loads(cli("doctor", "--wake", "ada", "--json").out)
    assert data["method"] == "codex-queue" and data["ok"] is True
    assert data["host"] == "codex" and data["chosen"] == "codex-queue"
    assert [s["method"] for s in data["ladder"]] == ["codex-queue", "tmux", "codex", "command"]
    assert data["ladder"][0]["since"] == "0.171.0"


def test_doctor_after_choosing_the_waiter_shows_it_chosen(cli: Cli, bin_dir: Path) -> None:
    fake_program(bin_dir, "claude", "2.1.332 (Claude Code)")
    assert cli("--agent", "ada", "install", "claude", "--hooks", "--wake").code == 0
    r = cli("doctor", "--wake", "ada")
    assert r.code == 0, r.err
    assert "  1. ✓ claude-peer (configured) ← chosen: Claude Code 2.1.332 (≥ 2.1.224)" in r.out


def test_doctor_says_what_the_configured_wake_lacks_now(cli: Cli, root: Path,
                                                        bin_dir: Path) -> None:
    codex = fake_program(bin_dir, "codex", "codex-cli 0.171.0")
    assert install(cli, "codex", "--hooks", "--wake").code == 0
    codex.unlink()
    r = cli("doctor", "--wake", "ada")
    assert r.code == 1
    assert "  problem now: codex is not on the watcher's PATH" in r.out
    assert "  1. ✗ codex-queue (configured): codex is not on PATH" in r.out


def test_doctor_finds_the_host_of_a_host_independent_wake(cli: Cli, root: Path) -> None:
    put_entry(root, {"wake_on_mail": True, "wake_method": "command", "command": ["true"]})
    r = cli("doctor", "--wake", "ada")
    assert r.code == 2 and r.err == ("mailslot: error: cannot tell which host ada runs in "
                                     "(its wake_method is command and no hook of it ran "
                                     "yet): give --host HOST\n")
    r = cli("doctor", "--wake", "ada", "--host", "gemini")
    assert r.code == 0, r.err
    assert "  3. ✓ command (configured) ← chosen: runs your program true" in r.out
    assert cli("doctor", "--wake", "ada", "--host", "nosuch").code == 2


@pytest.mark.parametrize("entry, message, code", [
    (None, "mailslot: error: config.json has no agent 'ada'", 2),
    ({"wake_on_mail": True, "wake_method": "tmux"},
     "mailslot: error: config.json: agents.ada.tmux_target is missing", 1),
    ({"wake_on_mail": "often"}, 'mailslot: error: config.json: agents.ada.wake_on_mail must', 1),
])
def test_doctor_refuses_an_unknown_agent_or_a_bad_config_in_one_line(
        cli: Cli, root: Path, entry: dict[str, Any] | None, message: str, code: int) -> None:
    if entry is not None:
        put_entry(root, entry)
    else:
        put_entry(root, {}, agent="bob")
    r = cli("doctor", "--wake", "ada")
    assert r.code == code and r.err.startswith(message) and r.err.count("\n") == 1
    assert r.out == ""


def test_doctor_host_goes_with_wake(cli: Cli) -> None:
    assert cli("init").code == 0
    r = cli("doctor", "--host", "claude")
    assert r.code == 2 and "--host goes with --wake AGENT" in r.err
