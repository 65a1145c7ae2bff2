"""One real launch: the real Claude Code, started by ``mailslot start``, runs offline
against the suite's scripted provider on loopback, speaks with its mailslot identity,
and is woken by mail (a resumed turn in the session mailslot chose the id of).

The host comes from ``MAILSLOT_HOSTS_BIN`` or the ``~/.cache/mailslot/hosts`` install.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mailslot import FileStore, Mailbox
from wake_helpers import watcher_pids

from .conftest import HOST_BIN
from .harness import Provider, woken_for

KEY = "sk-ant-offline-test-0123456789abcdefghij"


@pytest.fixture
def provider(tmp_path: Path) -> Iterator[Provider]:
    """The suite's scripted provider: the first request offering send_message (after
    ToolSearch, where the host defers it) gets a call of it to ``orchestrator``."""
    served = Provider(tmp_path / "provider", {"call": {"tool": "send_message", "args": {
        "to": "orchestrator", "subject": "builder reporting", "body": "started"}},
        "text": "ok"})
    yield served
    served.stop()


def bodies(provider: Provider) -> list[dict[str, Any]]:
    """What the model was asked, oldest first."""
    return [r["body"] for r in provider.model_requests()]


def wait_for(check: Callable[[], Any], what: str, seconds: float = 90.0) -> Any:
    deadline = time.monotonic() + seconds
    while not (found := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)
    return found


def test_real_claude_started_runs_as_its_identity_and_is_woken_by_mail(
        isolated: Path, root: Path, provider: Provider, monkeypatch: pytest.MonkeyPatch,
        cli: Callable[..., Any]) -> None:
    home, folder = isolated / "home", isolated / "project"
    folder.mkdir()
    (home / ".claude").mkdir()
    (home / ".claude.json").write_text(json.dumps({
        "hasCompletedOnboarding": True,
        "customApiKeyResponses": {"approved": [KEY[-20:]], "rejected": []},
        "projects": {str(folder): {"hasTrustDialogAccepted": True}}}))
    (home / ".claude" / "settings.json").write_text(json.dumps({
        "enabledMcpjsonServers": ["mailslot"],
        "permissions": {"allow": ["mcp__mailslot__send_message"]}}))
    (folder / ".mcp.json").write_text(json.dumps({"mcpServers": {"mailslot": {
        "command": sys.executable, "args": ["-m", "mailslot", "serve"]}}}))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", provider.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    # -p waits MCP_CONNECT_TIMEOUT_MS for servers (mailslot start sets 60 s): on a
    # heavily loaded box, longer
    monkeypatch.setenv("MCP_CONNECT_TIMEOUT_MS", "120000")
    monkeypatch.setenv("PATH", f"{HOST_BIN}{os.pathsep}{os.environ['PATH']}")
    FileStore(root).update_config(lambda c: c.update(owner="sarah") is None)

    done = cli("--agent", "sarah", "start", "claude", "--folder", str(folder),
               "--register-as", "builder", "--prompt", "Report to orchestrator.", "--json")
    assert done.code == 0, done.err
    started = json.loads(done.out)
    orchestrator = Mailbox(FileStore(root), None)
    mail = wait_for(lambda: orchestrator.store.entries("orchestrator", ("unread",)),
                    "mail from the started session")
    assert any("_builder_to_orchestrator_" in i for i, _ in mail)  # spoke as builder
    assert bodies(provider)[0]["messages"][0]["content"]  # the prompt reached the model
    assert "Report to orchestrator." in json.dumps(bodies(provider)[0]["messages"])

    # Nobody runs `mailslot watch`: the send starts a watcher on demand (a server with
    # nothing queued starts none), as a send does outside the tests.
    monkeypatch.delenv("MAILSLOT_ON_DEMAND_WATCHER")
    sent = cli("--agent", "orchestrator", "send", "--to", "builder", "--subject", "status?",
               "--body", "how far are you", "--json")
    message_id = json.loads(sent.out)["id"]
    try:
        wait_for(lambda: woken_for(root, message_id), "the on-demand watcher's wake", 240)
    finally:
        for pid in watcher_pids(root):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    resumed = [b for b in bodies(provider) if message_id in json.dumps(b.get("messages"))]
    assert resumed, "the wake notice never reached the model"
    assert started["session_id"] in json.dumps(FileStore(root).load_config())
