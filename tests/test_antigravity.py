"""Antigravity, against its documented contract: a fake ``agentapi`` on PATH records what
it is given, and a fake sidecar start runs ``mailslot sidecar antigravity`` as
Antigravity would (docs/hosts.md says what no fake can prove)."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import Result
from mailslot import FileStore, Mailbox
from mailslot.core.errors import InvalidInput, Refused
from mailslot.launch.starting import Request, start
from mailslot.wake.claims import Queue
from mailslot.wake.runner import WakeRunner
from wake_helpers import calls, configure, events, fake_host, wait_until

Box = Callable[[str | None], Mailbox]
TOKEN = "csrf-3f9a8b7c-6d5e-4f3a-2b1c"
ADDRESS = "127.0.0.1:50123"
OPENED = json.dumps({"response": {"newConversation": {"conversationId": "conv-42"}}})


def sidecar_file(root: Path, **fields: Any) -> Path:
    """The credentials file as the sidecar writes it (its writer: this test process)."""
    path = root / "sidecars" / "antigravity.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"address": ADDRESS, "token": TOKEN, "pid": os.getpid(), "project_id": "side-1",
            **fields}
    path.write_text(json.dumps(data))
    path.chmod(0o600)
    return path


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


# The sidecar ---------------------------------------------------------------------------
@pytest.fixture
def sidecar(root: Path, isolated: Path) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start ``mailslot sidecar antigravity`` as Antigravity does: with the session's
    address, token and project id in its environment."""
    started: list[subprocess.Popen[str]] = []

    def run(**env: str) -> subprocess.Popen[str]:
        child = subprocess.Popen(
            [sys.executable, "-m", "mailslot", "sidecar", "antigravity", "--dir", str(root)],
            env={**os.environ, **env}, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        started.append(child)
        return child

    yield run
    for child in started:
        child.kill()
        child.communicate()  # and close its pipes


def test_the_sidecar_writes_the_session_0600_atomically_and_removes_it_when_ended(
        root: Path, sidecar: Callable[..., subprocess.Popen[str]]) -> None:
    child = sidecar(ANTIGRAVITY_LS_ADDRESS=ADDRESS, ANTIGRAVITY_CSRF_TOKEN=TOKEN,
                    ANTIGRAVITY_PROJECT_ID="proj-9")
    path = root / "sidecars" / "antigravity.json"
    wait_until(path.exists, what="the sidecar's file")
    data = json.loads(path.read_text())
    assert (data["address"], data["token"], data["pid"], data["project_id"]) == (
        ADDRESS, TOKEN, child.pid, "proj-9")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert os.listdir(path.parent) == ["antigravity.json"]  # no half-written file beside it
    child.send_signal(signal.SIGTERM)
    _, said = child.communicate(timeout=30)
    assert child.returncode == 0 and not path.exists()
    assert str(path) in said and TOKEN not in said


def test_the_sidecar_makes_a_missing_mailbox_private_and_doctor_agrees(
        root: Path, sidecar: Callable[..., subprocess.Popen[str]],
        cli: Callable[..., Result]) -> None:
    assert not root.exists()
    child = sidecar(ANTIGRAVITY_LS_ADDRESS=ADDRESS, ANTIGRAVITY_CSRF_TOKEN=TOKEN)
    wait_until((root / "sidecars" / "antigravity.json").exists, what="the sidecar's file")
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    checked = cli("doctor", "--dir", str(root))
    assert checked.code == 0 and "open to other users" not in checked.out, checked.out
    child.send_signal(signal.SIGTERM)
    child.communicate(timeout=30)


def test_a_newer_sidecars_file_is_not_removed_by_an_older_one(
        root: Path, sidecar: Callable[..., subprocess.Popen[str]]) -> None:
    env = {"ANTIGRAVITY_LS_ADDRESS": ADDRESS, "ANTIGRAVITY_CSRF_TOKEN": TOKEN}
    old = sidecar(**env)
    path = root / "sidecars" / "antigravity.json"
    wait_until(lambda: path.exists() and json.loads(path.read_text())["pid"] == old.pid,
               what="the first sidecar's file")
    new = sidecar(**env)
    wait_until(lambda: json.loads(path.read_text())["pid"] == new.pid,
               what="the second sidecar's file")
    old.send_signal(signal.SIGTERM)
    old.communicate(timeout=30)
    assert json.loads(path.read_text())["pid"] == new.pid


def test_the_sidecar_outside_antigravity_says_so_and_writes_nothing(
        root: Path, cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTIGRAVITY_LS_ADDRESS", raising=False)
    done = cli("sidecar", "antigravity", "--dir", str(root))
    assert done.code == 1 and "only as Antigravity's sidecar" in done.err
    monkeypatch.setenv("ANTIGRAVITY_LS_ADDRESS", "http://192.0.2.7:50123")
    monkeypatch.setenv("ANTIGRAVITY_CSRF_TOKEN", TOKEN)
    done = cli("sidecar", "antigravity", "--dir", str(root))
    assert done.code == 1 and "not an address on this machine" in done.err
    assert not (root / "sidecars").exists()
    assert cli("sidecar", "claude", "--dir", str(root)).code != 0


def test_install_sidecar_registers_and_enables_it(root: Path, isolated: Path,
                                                  cli: Callable[..., Result]) -> None:
    switches = isolated / "home" / ".gemini" / "config" / "config.json"
    switches.parent.mkdir(parents=True)
    switches.write_text(json.dumps({"theme": "dark"}))
    done = cli("install", "antigravity", "--agent", "ag", "--dir", str(root), "--sidecar")
    assert done.code == 0, done.err
    definition = isolated / "home/.gemini/config/sidecars/mailslot/sidecar.json"
    entry = json.loads(definition.read_text())
    assert entry["args"] == ["sidecar", "antigravity", "--dir", str(root)]
    assert os.path.basename(entry["command"]) == "mailslot"
    assert entry["restart_policy"] == "on-failure"
    assert json.loads(switches.read_text()) == {"theme": "dark",
                                                "sidecars": {"mailslot": {"enabled": True}}}
    again = cli("install", "antigravity", "--agent", "ag", "--dir", str(root), "--sidecar")
    assert again.out.endswith("nothing changed.\n")
    refused = cli("install", "claude", "--agent", "ag", "--dir", str(root), "--sidecar")
    assert refused.code != 0 and "--sidecar works only for antigravity" in refused.err


# Waking --------------------------------------------------------------------------------
def wake(box: Box, root: Path, fields: dict[str, Any], **top: Any) -> str:
    configure(root, {"ag": {"wake_on_mail": True, "wake_method": "agentapi",
                            "conversation_id": "cascade-42", **fields}}, **top)
    message = box("claude").send("ag", "Private subject", "secret body")
    WakeRunner(FileStore(root)).run_agent("ag")
    return message.id


def test_a_wake_sends_the_notice_with_the_sidecars_credentials_in_the_environment(
        box: Box, root: Path, bin_dir: Path, cli: Callable[..., Result]) -> None:
    record = fake_host(bin_dir, "agentapi", out=json.dumps({"response": {}}))
    sidecar_file(root)
    mid = wake(box, root, {})
    [call] = calls(record)
    notice = call["argv"][-1]
    assert call["argv"] == ["send-message", "cascade-42", notice]
    assert notice.startswith("[mailslot]") and mid in notice
    assert "Private subject" not in notice
    env = call["env"]
    assert (env["ANTIGRAVITY_LS_ADDRESS"], env["ANTIGRAVITY_CSRF_TOKEN"],
            env["ANTIGRAVITY_PROJECT_ID"]) == (ADDRESS, TOKEN, "side-1")
    assert events(root)[-1]["event"] == "wake_ok"
    assert TOKEN not in (root / "log" / "events.jsonl").read_text()
    shown = cli("watch", "--validate")
    assert "ANTIGRAVITY_CSRF_TOKEN=<secret>" in shown.out and TOKEN not in shown.out


@pytest.mark.parametrize(("own", "configured", "expected"), [
    ("agent-1", "conf-1", "agent-1"), (None, "conf-1", "conf-1"), (None, None, "side-1")])
def test_the_woken_agents_project_comes_before_the_configs_and_the_sidecars(
        box: Box, root: Path, bin_dir: Path, own: str | None, configured: str | None,
        expected: str) -> None:
    record = fake_host(bin_dir, "agentapi", out="{}")
    sidecar_file(root)
    launch = {"antigravity": {"project_id": configured}} if configured else {}
    wake(box, root, {"project_id": own} if own else {}, launch=launch)
    assert calls(record)[0]["env"]["ANTIGRAVITY_PROJECT_ID"] == expected


@pytest.mark.parametrize("kind", ["missing", "stale", "reused pid"])
def test_a_wake_without_a_running_session_is_skipped_and_the_mail_delivered(
        box: Box, root: Path, bin_dir: Path, kind: str) -> None:
    record = fake_host(bin_dir, "agentapi", out="{}")
    if kind == "stale":
        sidecar_file(root, pid=dead_pid())
    elif kind == "reused pid":
        path = sidecar_file(root)  # pid: this test process, which started long before...
        year_ago = time.time() - 365 * 86400
        os.utime(path, (year_ago, year_ago))  # ...a file written a year ago
    mid = wake(box, root, {})
    assert calls(record) == []
    last = events(root)[-1]
    assert last["event"] == "wake_skipped" and "the message waits in the inbox" in last["reason"]
    assert ("does not exist" if kind == "missing" else "is no longer running") in last["reason"]
    assert [i.message.id for i in box("ag").inbox()] == [mid]
    assert list(box("claude").inbox()) == []  # nobody was told the wake failed
    assert Queue(FileStore(root)).pending("ag") == []


@pytest.mark.parametrize(("fields", "reason"), [
    ({"address": "http://192.0.2.7:50123"}, "no address on this machine"),
    ({"token": ""}, "no usable token"),
    ({"pid": None}, "no writer pid"),
])
def test_unusable_credentials_fail_the_wake_without_running_anything(
        box: Box, root: Path, bin_dir: Path, fields: dict[str, Any], reason: str) -> None:
    record = fake_host(bin_dir, "agentapi")
    sidecar_file(root, **fields)
    wake(box, root, {}, wake_retry={"attempts": 1})
    assert calls(record) == []
    assert events(root)[-1]["event"] == "wake_failed"
    assert reason in events(root)[-1]["reason"]
    assert TOKEN not in (root / "log" / "events.jsonl").read_text()


def test_a_symlinked_credentials_file_is_not_followed(box: Box, root: Path, bin_dir: Path,
                                                      tmp_path: Path) -> None:
    record = fake_host(bin_dir, "agentapi")
    real = sidecar_file(root)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    wake(box, root, {"credentials_file": str(link)}, wake_retry={"attempts": 1})
    assert calls(record) == []
    assert "is a symlink; not followed" in events(root)[-1]["reason"]


@pytest.mark.parametrize("code", [1, 0])
def test_agentapis_own_error_reaches_the_wake_report_without_the_token(
        box: Box, root: Path, bin_dir: Path, code: int) -> None:
    error = json.dumps({"error": f"cascade cascade-42 not found (csrf {TOKEN})"})
    fake_host(bin_dir, "agentapi", code=code, out=error)
    sidecar_file(root)
    wake(box, root, {}, wake_retry={"attempts": 1})
    last = events(root)[-1]
    assert last["event"] == "wake_failed" and "cascade cascade-42 not found" in last["reason"]
    if code:
        assert "exited with status 1" in last["reason"]
    assert "<secret>" in last["reason"]
    assert TOKEN not in (root / "log" / "events.jsonl").read_text()


# Starting ------------------------------------------------------------------------------
@pytest.fixture
def registry(isolated: Path) -> Path:
    """Antigravity's project registry, as it keeps it (one JSON file per project)."""
    folder = isolated / "home" / ".gemini" / "config" / "projects"
    folder.mkdir(parents=True)
    return folder


def add_project(registry: Path, pid: str, name: str, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (registry / f"{pid}.json").write_text(json.dumps({
        "id": pid, "name": name,
        "projectResources": {"resources": [{"gitFolder": {"folderUri": f"file://{folder}"}}]}}))


def go(box: Box, root: Path, folder: Path, **asked: Any) -> Any:
    configure(root, {}, launch={"allowed_callers": ["orchestrator"],
                                **asked.pop("launch", {})})
    return start(box("orchestrator"), Request("antigravity", str(folder), "hi", **asked),
                 via="mcp")


def log(root: Path) -> list[dict[str, Any]]:
    return FileStore(root).started_sessions()


def test_a_start_by_project_name_or_folder_names_the_project_and_its_source(
        box: Box, root: Path, bin_dir: Path, registry: Path, isolated: Path) -> None:
    record = fake_host(bin_dir, "agentapi", out=OPENED)
    sidecar_file(root)
    add_project(registry, "p-app", "app", isolated / "src" / "app")
    add_project(registry, "p-web", "web", isolated / "src" / "web")
    by_name = go(box, root, isolated, project="app", name="Review", model="pro",
                 register_as="reviewer")
    agent = FileStore(root).load_config()["agents"]["reviewer"]
    assert (agent["wake_method"], agent["conversation_id"], agent["project_id"]) == (
        "agentapi", "conv-42", "p-app")
    assert "credentials_file" not in agent  # the sidecar's file in the mailbox is the default
    by_folder = go(box, root, isolated, project=str(isolated / "src" / "web"))
    first, second = calls(record)
    assert first["argv"] == ["new-conversation", "--model=pro", "--title=Review", "--",
                             first["argv"][-1]]
    assert first["argv"][-1].startswith("[mailslot] This prompt came from agent orchestrator")
    assert (first["env"]["ANTIGRAVITY_PROJECT_ID"], second["env"]["ANTIGRAVITY_PROJECT_ID"]) \
        == ("p-app", "p-web")
    assert first["env"]["ANTIGRAVITY_CSRF_TOKEN"] == TOKEN
    assert not any(TOKEN in a for a in first["argv"])
    for result, project in ((by_name, "p-app"), (by_folder, "p-web")):
        assert (result.outcome, result.session_id, result.project, result.project_source) \
            == ("handed_off", "conv-42", project, "parameter")
    assert [(r["project"], r["project_source"]) for r in log(root)] == [
        ("p-app", "parameter"), ("p-web", "parameter")]
    for text in (json.dumps(by_name.as_dict()), (root / "log" / "sessions.jsonl").read_text(),
                 (root / "config.json").read_text()):
        assert TOKEN not in text


@pytest.mark.parametrize(("project", "said"), [
    ("nope", "is not in Antigravity's project registry"),
    ("twin", "is ambiguous: projects p-1, p-2 match"),
    ("/nowhere/at/all", "is not in Antigravity's project registry"),
])
def test_an_unknown_or_ambiguous_project_starts_nothing(
        box: Box, root: Path, bin_dir: Path, registry: Path, isolated: Path, project: str,
        said: str) -> None:
    record = fake_host(bin_dir, "agentapi", out=OPENED)
    sidecar_file(root)
    add_project(registry, "p-1", "twin", isolated / "a")
    add_project(registry, "p-2", "twin", isolated / "b")
    with pytest.raises(InvalidInput, match=said):
        go(box, root, isolated, project=project)
    assert calls(record) == [] and log(root) == []


@pytest.mark.parametrize(("configured", "source", "expected"), [
    ("conf-1", "config", "conf-1"), (None, "sidecar", "side-1")])
def test_without_a_project_the_configs_then_the_sidecars_is_used(
        box: Box, root: Path, bin_dir: Path, isolated: Path, configured: str | None,
        source: str, expected: str) -> None:
    record = fake_host(bin_dir, "agentapi", out=OPENED)
    sidecar_file(root)
    launch = {"antigravity": {"project_id": configured}} if configured else {}
    result = go(box, root, isolated, launch=launch)
    assert calls(record)[0]["env"]["ANTIGRAVITY_PROJECT_ID"] == expected
    assert (result.project, result.project_source) == (expected, source)
    assert (log(root)[0]["project"], log(root)[0]["project_source"]) == (expected, source)


def test_a_failing_new_conversation_reports_agentapis_error_without_the_token(
        box: Box, root: Path, bin_dir: Path, isolated: Path) -> None:
    fake_host(bin_dir, "agentapi", code=2,
              out=json.dumps({"error": f"not signed in (token {TOKEN})"}))
    sidecar_file(root)
    result = go(box, root, isolated)
    assert result.outcome == "failed"
    assert "exit status 2" in result.error and "not signed in" in result.error
    assert TOKEN not in result.error and "<secret>" in result.error
    assert TOKEN not in (root / "log" / "sessions.jsonl").read_text()


def test_a_start_without_a_running_session_fails_naming_the_sidecar(
        box: Box, root: Path, bin_dir: Path, isolated: Path) -> None:
    record = fake_host(bin_dir, "agentapi", out=OPENED)
    result = go(box, root, isolated)
    assert result.outcome == "failed" and "mailslot's sidecar" in result.error
    assert calls(record) == []


def test_a_start_with_no_project_id_anywhere_is_refused_before_anything_runs(
        box: Box, root: Path, bin_dir: Path, isolated: Path) -> None:
    """agentapi new-conversation needs a project id: none given, none configured, none
    from the session, so nothing runs and nothing is logged."""
    record = fake_host(bin_dir, "agentapi", out=OPENED)
    sidecar_file(root, project_id=None)
    with pytest.raises(Refused) as refused:
        go(box, root, isolated)
    said = str(refused.value)
    assert said.startswith("no Antigravity project id for the new conversation")
    assert "\n" not in said and "nothing was started" in said
    assert calls(record) == [] and log(root) == []
    result = go(box, root, isolated, launch={"antigravity": {"project_id": "conf-1"}})
    assert result.outcome == "handed_off" and calls(record)  # with one it starts


def test_a_start_run_inside_antigravity_uses_its_own_environment(
        box: Box, root: Path, bin_dir: Path, isolated: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The MCP server or terminal Antigravity started holds the session's own
    ANTIGRAVITY_* variables: a start from there needs no sidecar."""
    record = fake_host(bin_dir, "agentapi", out=OPENED)
    monkeypatch.setenv("ANTIGRAVITY_LS_ADDRESS", "127.0.0.1:50999")
    monkeypatch.setenv("ANTIGRAVITY_CSRF_TOKEN", "own-token")
    monkeypatch.setenv("ANTIGRAVITY_PROJECT_ID", "own-proj")
    monkeypatch.setenv("ANTIGRAVITY_SOMETHING_ELSE", "of the caller's session")
    result = go(box, root, isolated)
    [call] = calls(record)
    env = call["env"]
    assert (env["ANTIGRAVITY_LS_ADDRESS"], env["ANTIGRAVITY_CSRF_TOKEN"],
            env["ANTIGRAVITY_PROJECT_ID"]) == ("127.0.0.1:50999", "own-token", "own-proj")
    assert "ANTIGRAVITY_SOMETHING_ELSE" not in env  # only what mailslot chose
    assert (result.outcome, result.project, result.project_source) == (
        "handed_off", "own-proj", "environment")
    assert log(root)[0]["project_source"] == "environment"
    assert "own-token" not in (root / "log" / "sessions.jsonl").read_text()
    # the environment's session beats the sidecar's; the owner's file beats both
    sidecar_file(root)
    go(box, root, isolated)
    assert calls(record)[-1]["env"]["ANTIGRAVITY_CSRF_TOKEN"] == "own-token"
    owners = sidecar_file(root.parent / "owners", token="owners-token")
    go(box, root, isolated, launch={"antigravity": {"credentials_file": str(owners)}})
    assert calls(record)[-1]["env"]["ANTIGRAVITY_CSRF_TOKEN"] == "owners-token"


@pytest.mark.parametrize(("address", "token", "said"), [
    ("http://192.0.2.7:50123", "t", "not an address on this machine"),
    ("127.0.0.1:50123", "", "only one is set here"),
])
def test_an_unusable_own_environment_starts_nothing(
        box: Box, root: Path, bin_dir: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch,
        address: str, token: str, said: str) -> None:
    record = fake_host(bin_dir, "agentapi", out=OPENED)
    monkeypatch.setenv("ANTIGRAVITY_LS_ADDRESS", address)
    monkeypatch.setenv("ANTIGRAVITY_CSRF_TOKEN", token)
    result = go(box, root, isolated, launch={"antigravity": {"project_id": "conf-1"}})
    assert result.outcome == "failed" and said in result.error
    assert calls(record) == []


def test_agentapi_is_found_where_antigravity_installs_it_when_not_on_path(
        box: Box, root: Path, isolated: Path, bin_dir: Path) -> None:
    own = isolated / "home" / ".gemini" / "antigravity" / "bin"
    own.mkdir(parents=True)
    record = fake_host(own, "agentapi", out=OPENED)
    sidecar_file(root)
    result = go(box, root, isolated)  # bin_dir, first on PATH, has no agentapi
    assert result.outcome == "handed_off" and len(calls(record)) == 1
    wake(box, root, {})
    assert [c["argv"][0] for c in calls(record)] == ["new-conversation", "send-message"]
    assert events(root)[-1]["event"] == "wake_ok"


def test_model_tiers_are_checked_against_the_documented_list(
        box: Box, root: Path, bin_dir: Path, isolated: Path) -> None:
    record = fake_host(bin_dir, "agentapi", out=OPENED)
    sidecar_file(root)
    with pytest.raises(InvalidInput, match="flash_lite, flash, pro"):
        go(box, root, isolated, model="gemini-3-pro")
    assert calls(record) == [] and log(root) == []
