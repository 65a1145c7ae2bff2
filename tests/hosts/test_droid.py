"""Factory's Droid against the real program, offline, registered by ``mailslot install
droid``: it connects in either scope, its model's tool call (loaded with ToolSearch)
delivers mail as the agent with the person's "always allow" approval and no bypass flag
(without it the call does not run), the installed hooks show mail to the model at
session start, at the end of a turn (Stop) and at a prompt (TUI), a ``droid`` wake
resumes the latest headless session with the notice, and the TUI's "Always allow"
records exactly the approval the harness writes."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable

import pytest

from . import hosts_droid
from .conftest import VERSIONS
from .harness import World, request_text
from .test_checks import outside_framing

AGENT = "quinn"
DROID = VERSIONS.get("droid", "absent")
pytestmark = pytest.mark.skipif(DROID == "absent", reason="droid is not installed")
ONCE = [pytest.param(DROID, id=f"droid-{DROID}")]




def _result(done: subprocess.CompletedProcess[str]) -> dict[str, object]:
    """The JSON result line `droid exec -o json` prints last."""
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["is_error"] is False, result
    return result


@pytest.mark.parametrize("scope", [pytest.param(s, id=f"droid-{DROID}-{s}")
                                   for s in ("project", "user")])
def test_droid_install_connects_and_a_tool_call_delivers(
    world: Callable[..., World], scope: str
) -> None:
    w = world("droid")
    installed = w.install(AGENT, "--scope", scope)
    assert installed.returncode == 0, installed.stderr
    assert "install writes no approval" in installed.stdout + installed.stderr  # the note
    connected = rf"mailslot\s+stdio\s+connected\s+\[{scope}\]"
    listed = w.health(connected, "droid", "mcp", "list")
    assert re.search(connected, listed), listed
    result = _result(w.run("Do the task."))
    assert result["result"] == "FAKE-MODEL-DONE"
    # Droid defers MCP tools: the model loads one with ToolSearch, then calls it.
    replies = [r["reply"] for r in w.provider.model_requests()]
    assert replies == ["tool:ToolSearch", "tool:mailslot___send_message", "text"], replies
    (sent,) = w.inbox("observer")
    assert sent["from"] == AGENT
    paths = {r["path"] for r in w.provider.requests() if not r["path"].startswith("/404/")}
    assert paths == {"/v1/chat/completions"}, paths  # Factory's service: all under /404/


@pytest.mark.parametrize("version", ONCE)
def test_droid_exec_does_not_run_the_tool_without_the_persons_approval(
    world: Callable[..., World], version: str
) -> None:
    """``install droid`` writes no approval: without the person's "always allow" (or with
    one for another server identity) ``droid exec`` stops at the call and no mail goes."""
    w = world("droid")
    assert w.install(AGENT).returncode == 0
    user = w.home / ".factory" / "mcp.json"
    doc = json.loads(user.read_text(encoding="utf-8"))
    doc["persistentPermissions"]["servers"]["mailslot"]["serverIdentity"] = "0" * 32
    user.write_text(json.dumps(doc), encoding="utf-8")
    w.run("Do the task.")
    assert "tool:mailslot___send_message" in [r["reply"] for r in w.provider.model_requests()]
    assert w.inbox("observer") == []


@pytest.mark.parametrize("version", ONCE)
def test_droid_hooks_show_mail_at_session_start_and_at_the_turns_end(
    world: Callable[..., World], version: str
) -> None:
    """``install droid --hooks`` writes ``.factory/hooks.json`` (events at its top level,
    no PostToolUse): under ``droid exec``, mail waiting before the run reaches the first
    request (SessionStart), and mail that lands during the tool call is shown by the Stop
    hook, which continues the turn with one more request (``auto_continue_on_stop``)."""
    w = world("droid", {"call": {"tool": "send_message", "args": {
        "to": AGENT, "subject": "MIDTURN-d1", "body": "Line one.\nLine two."}}})
    assert w.install(AGENT, "--hooks").returncode == 0
    hooks = json.loads((w.project / ".factory" / "hooks.json").read_text(encoding="utf-8"))
    assert list(hooks) == ["SessionStart", "UserPromptSubmit", "Stop"], hooks
    w.mailbox.mkdir(mode=0o700, exist_ok=True)  # the owner lets a stop hook continue
    w.write_config({"agents": {AGENT: {
        "auto_continue_on_stop": True}}})
    early = w.send("bob", AGENT, "EARLY-d1", "BEFORE-BODY")
    result = _result(w.run("Do the task."))
    asked = w.provider.model_requests()
    first = request_text(asked[0])
    assert f"[mailslot] message {early}" in first and "> BEFORE-BODY" in first
    assert outside_framing(asked[:1], "BEFORE-BODY") == []
    (mail,) = [m for m in w.inbox(AGENT) if m["subject"] == "MIDTURN-d1"]
    replies = [r["reply"] for r in asked]
    assert replies == ["tool:ToolSearch", "tool:mailslot___send_message", "text", "text"]
    assert not any(f"[mailslot] message {mail['id']}" in request_text(r) for r in asked[:3])
    shown = request_text(asked[3])  # the turn the Stop hook continued
    assert f"[mailslot] message {mail['id']}" in shown
    assert re.search(r"^> Line two\.$", shown, re.M), "the body, quoted"
    latest = w.mailbox / "latest" / AGENT / "droid"
    assert latest.exists() and str(result["session_id"]) in latest.read_text(encoding="utf-8")


@pytest.mark.parametrize("version", ONCE)
def test_droid_tui_prompt_hook_shows_mail_that_came_between_prompts(
    world: Callable[..., World], version: str
) -> None:
    """In the TUI (where UserPromptSubmit fires), mail that arrives after a turn ended
    reaches the model with the next prompt, from the installed UserPromptSubmit hook."""
    w = world("droid", {"call": None})
    assert w.install(AGENT, "--hooks").returncode == 0
    w.env["FACTORY_AIRGAP_ENABLED"] = "true"
    pane = w.pane("droid", ["droid"])
    try:
        pane.wait_screen("Trust this folder?", 60)
        pane.keys("Enter")  # what the person does once per folder
        pane.wait_screen("MCPs (1)", 60)
        pane.type("Hello there")
        pane.wait_screen("FAKE-MODEL-DONE", 60)
        pane.wait_screen("Hooks Stop", 30)
        w.provider.script({"call": None, "text": "SECOND-DONE"})
        sent = w.send("bob", AGENT, "between prompts", "PROMPT-BODY")
        pane.type("Second prompt.")
        pane.wait_screen("SECOND-DONE", 60)
    finally:
        pane.kill()
    asked = w.provider.model_requests()
    (second,) = [r for r in asked if "Second prompt." in request_text(r)]
    shown = request_text(second)
    assert f"[mailslot] message {sent}" in shown and "> PROMPT-BODY" in shown
    assert outside_framing([second], "PROMPT-BODY") == []
    assert not any("PROMPT-BODY" in request_text(r) for r in asked if r is not second)


@pytest.mark.parametrize("version", ONCE)
def test_droid_wake_resumes_the_latest_headless_session(
    world: Callable[..., World], version: str
) -> None:
    """The watcher's ``droid`` wake (``droid exec -s ID NOTICE``), with session_id
    "latest" as the SessionStart hook recorded it, continues that session: the notice
    reaches the model with turn one's history, and the resumed start shows the mail."""
    w = world("droid", {"call": None})
    assert w.install(AGENT, "--hooks").returncode == 0
    w.set_wake(AGENT, "droid", session_id="latest")
    first = _result(w.run("Hello there"))
    _, woke = w.woken_by_mail(AGENT, "WAKE-BODY")
    text = request_text(woke[0])
    assert "Hello there" in text  # the same session, resumed
    assert f"1 message waiting for {AGENT}" in text and "> WAKE-BODY" in text
    assert outside_framing(woke, "WAKE-BODY") == []
    sessions = w.home / ".factory" / "sessions"
    assert [p.stem for p in sessions.rglob("*.jsonl")] == [str(first["session_id"])]


@pytest.mark.parametrize("version", ONCE)
def test_droid_always_allow_records_the_approval_the_harness_writes(
    world: Callable[..., World], version: str
) -> None:
    """In the TUI, "Always allow all "mailslot" tools" records exactly the approval
    hosts_droid writes after ``install droid`` (but its time). The TUI wants a Factory
    login unless Airgap Mode is on, and a trusted folder (headless `droid exec` asks for
    neither)."""
    ours, theirs = world("droid"), world("droid")
    assert ours.install(AGENT, "--scope", "user").returncode == 0
    assert theirs.mailslot("install", "droid", "--agent", AGENT, "--scope",
                           "user").returncode == 0  # no approval: the person gives it
    theirs.env["FACTORY_AIRGAP_ENABLED"] = "true"
    pane = theirs.pane("droid", ["droid"])
    try:
        pane.wait_screen("Trust this folder?", 60)
        pane.keys("Enter")
        pane.wait_screen("MCPs (1)", 60)
        pane.type("Do the task.")
        pane.wait_screen('Always allow all "mailslot" tools', 60)
        pane.keys("Down", "Down", "Down")
        pane.keys("Enter")
        pane.wait_screen("FAKE-MODEL-DONE", 60)
    finally:
        pane.kill()
    (sent,) = theirs.inbox("observer")
    assert sent["from"] == AGENT

    def approval(w: World) -> dict[str, object]:
        doc = json.loads((w.home / ".factory" / "mcp.json").read_text(encoding="utf-8"))
        found: dict[str, object] = doc["persistentPermissions"]["servers"]["mailslot"]
        return {k: v for k, v in found.items() if k != "approvedAt"}

    entry = hosts_droid.installed_entry(theirs)
    assert entry is not None
    assert approval(theirs) == {"impactLevel": "high",
                                "serverIdentity": hosts_droid.identity(entry)}
    assert set(approval(ours)) == set(approval(theirs))
    assert approval(ours)["impactLevel"] == approval(theirs)["impactLevel"]
