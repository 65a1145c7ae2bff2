"""One real launch: the real Claude Code, started by ``mailslot start``, runs offline
against a scripted Anthropic provider on loopback, speaks with its mailslot identity,
and is woken by mail (a resumed turn in the session mailslot chose the id of).

Self-contained for now (its own small provider; the host from ``MAILSLOT_HOSTS_BIN`` or
the ``~/.cache/mailslot/hosts`` install the host suite makes); it moves under
``make test-hosts`` when that suite lands.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from mailslot import FileStore, Mailbox

KEY = "sk-ant-offline-test-0123456789abcdefghij"


def _host_bin() -> str | None:
    given = os.environ.get("MAILSLOT_HOSTS_BIN")
    if given:
        return given
    found = sorted(glob.glob(os.path.expanduser(
        "~/.cache/mailslot/hosts/*/node_modules/.bin/claude")))
    return os.path.dirname(found[0]) if found else None


HOST_BIN = _host_bin()  # read at import: the tests' fixtures change HOME


class Provider(BaseHTTPRequestHandler):
    """Anthropic Messages, streamed: the first request offering mailslot's send_message
    gets a call of it (to ``orchestrator``); every other request gets plain text."""

    bodies: ClassVar[list[dict[str, Any]]] = []

    def log_message(self, fmt: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        if self.path.split("?")[0].endswith("/count_tokens"):
            return self._send(json.dumps({"input_tokens": 10}).encode(), "application/json")
        Provider.bodies.append(body)
        tools = [t.get("name", "") for t in body.get("tools") or []]
        tool = next((t for t in tools if t.endswith("send_message")), None)
        called = "tool_use" in json.dumps(body.get("messages"))
        if tool and not called:
            block: dict[str, Any] = {"type": "tool_use", "id": "toolu_1", "name": tool,
                                     "input": {}}
            args = {"to": "orchestrator", "subject": "builder reporting", "body": "started"}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(args)}
            stop = "tool_use"
        else:
            block, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": "ok"}
            stop = "end_turn"
        message = {"id": "msg_1", "type": "message", "role": "assistant",
                   "model": body.get("model", "fake"), "content": [], "stop_reason": None,
                   "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}
        events = [("message_start", {"type": "message_start", "message": message}),
                  ("content_block_start", {"type": "content_block_start", "index": 0,
                                           "content_block": block}),
                  ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                           "delta": delta}),
                  ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                  ("message_delta", {"type": "message_delta", "delta": {
                      "stop_reason": stop, "stop_sequence": None},
                      "usage": {"output_tokens": 1}}),
                  ("message_stop", {"type": "message_stop"})]
        self._send("".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in events)
                   .encode(), "text/event-stream")

    def _send(self, data: bytes, kind: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def provider() -> Iterator[str]:
    Provider.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Provider)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def wait_for(check: Callable[[], Any], what: str, seconds: float = 90.0) -> Any:
    deadline = time.monotonic() + seconds
    while not (found := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)
    return found


def test_real_claude_started_runs_as_its_identity_and_is_woken_by_mail(
        isolated: Path, root: Path, provider: str, monkeypatch: pytest.MonkeyPatch,
        cli: Callable[..., Any]) -> None:
    if HOST_BIN is None:
        pytest.fail("Claude Code is not installed: set MAILSLOT_HOSTS_BIN or install the "
                    "hosts (tests/hosts, make test-hosts)")
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
    monkeypatch.setenv("ANTHROPIC_BASE_URL", provider)
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
    assert Provider.bodies[0]["messages"][0]["content"]  # the prompt reached the model
    assert "Report to orchestrator." in json.dumps(Provider.bodies[0]["messages"])

    sent = cli("--agent", "orchestrator", "send", "--to", "builder", "--subject", "status?",
               "--body", "how far are you", "--json")
    message_id = json.loads(sent.out)["id"]
    woke = subprocess.run([sys.executable, "-m", "mailslot", "watch", "--once"],
                          capture_output=True, text=True, timeout=100)
    assert woke.returncode == 0 and "woke builder (claude)" in woke.stdout, woke.stdout
    resumed = [b for b in Provider.bodies if message_id in json.dumps(b.get("messages"))]
    assert resumed, "the wake notice never reached the model"
    assert started["session_id"] in json.dumps(FileStore(root).load_config())
