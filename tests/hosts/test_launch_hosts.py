"""`mailslot start HOST --register-as NAME` against each real host, offline.

For each of Claude Code, Codex, Gemini CLI and Copilot CLI: the folder's installed
mailslot server names another agent (``folder-default``), an agent (``orchestrator``)
starts a background session registered as ``builder``, and the real host

* runs, and its first request shows the prompt after the agent notice;
* speaks as ``builder`` (its mail reaches the orchestrator from ``builder``), through the
  per-session server mailslot gave it, not the folder's (Gemini has no per-session MCP
  settings: its start is refused while the folder's server names another agent, and
  runs as ``builder`` once that server reads ``MAILSLOT_AGENT``);
* is woken by mail to ``builder`` (claude, gemini, copilot: a resumed turn in the
  session id mailslot chose), and that turn reads ``builder``'s mail.

Codex's session id cannot be chosen in advance, so a background Codex start is
registered with no wake (docs/launch.md); its wake is not shown here.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from .harness import MAILSLOT, World, request_text, wait_for, woken_for

Worlds = Callable[..., World]
REPORT = {"tool": "send_message", "args": {"to": "orchestrator", "subject": "builder reporting",
                                           "body": "started"}}
LAUNCH: dict[str, dict[str, Any]] = {
    "claude": {}, "codex": {}, "gemini": {"default_model": "gemini-2.5-flash"},
    "copilot": {"allow_tools": ["mailslot"]},
}
SANITISED = {"gemini", "copilot"}
"""Hosts that hand their MCP servers and hooks no secrets from the environment: a watcher
started from inside them cannot wake a host whose key is only there, as here (docs/wake.md,
"Which environment a watcher has"). Their tests turn the on-demand watcher off and run
`watch --once` as a person with the keys would; the others are woken by nobody's watch."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _start(w: World, host: str) -> dict[str, Any]:
    w.install("folder-default")
    if host == "gemini":  # no per-session server: the folder's must read MAILSLOT_AGENT
        refused = w.mailslot("--agent", "orchestrator", "start", host, "--folder",
                             str(w.project), "--register-as", "builder", "--prompt", "x",
                             check=False)
        assert refused.returncode != 0 and "registers mailslot as agent 'folder-default'" \
            in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
        settings = w.project / ".gemini" / "settings.json"
        data = json.loads(settings.read_text())
        data["mcpServers"]["mailslot"]["args"] = [
            a for a in data["mcpServers"]["mailslot"]["args"]
            if a not in ("--agent", "folder-default")]
        settings.write_text(json.dumps(data))
    w.mailbox.mkdir(mode=0o700, exist_ok=True)
    config: dict[str, Any] = {"owner": "sarah", "launch": {host: LAUNCH[host]},
                              "watcher": {"on_demand": host not in SANITISED}}
    w.write_config(config)
    done = w.mailslot("--agent", "orchestrator", "start", host, "--folder", str(w.project),
                      "--register-as", "builder", "--prompt", "Report to orchestrator.",
                      "--json")
    started: dict[str, Any] = json.loads(done.stdout)
    assert started["outcome"] == "background", started
    return started


@pytest.mark.timeout(600)  # a start, a whole turn, then a resumed turn, on a busy machine
def test_started_session_runs_speaks_as_its_name_and_is_woken(host: str,
                                                              world: Worlds) -> None:
    w = world(host, {"call": REPORT})
    # Claude -p waits MCP_CONNECT_TIMEOUT_MS (default 5 s) for servers before its first
    # request; `mailslot serve` takes longer than that on a loaded machine.
    w.env["MCP_CONNECT_TIMEOUT_MS"] = "120000"
    started = _start(w, host)
    mail = wait_for(lambda: [m for m in w.inbox("orchestrator") if m["from"] == "builder"],
                    150, f"mail from the started {host} session")
    assert mail[0]["subject"] == "builder reporting"
    assert not [m for m in w.inbox("orchestrator") if m["from"] == "folder-default"]
    first = request_text(w.provider.model_requests()[0])
    assert "This prompt came from agent orchestrator through mailslot, not from sarah" in first
    assert "Report to orchestrator." in first
    wait_for(lambda: not _alive(started["pid"]), 120, f"the started {host} run to end")

    if host == "codex":  # no session id to resume: registered without a wake
        agent = json.loads((w.mailbox / "config.json").read_text())["agents"]["builder"]
        assert agent["wake_method"] == "unsupported"
        return
    w.provider.script({"call": {"tool": "read_messages", "args": {}}})
    before = len(w.provider.model_requests())
    sent = w.send("orchestrator", "builder", "status?", "WAKE-BODY-7f3a")
    if host in SANITISED:
        woke = subprocess.run([MAILSLOT, "--dir", str(w.mailbox), "watch", "--once"],
                              cwd=w.project, env=w.env, capture_output=True, text=True,
                              timeout=240, check=False)
        assert "woke builder" in woke.stdout, woke.stdout + woke.stderr
    else:  # nobody runs `watch`: the watcher the started session began on demand wakes it
        wait_for(lambda: woken_for(w.mailbox, sent), 240, f"the on-demand watcher to wake {host}")
    later = w.provider.model_requests()[before:]
    texts = [request_text(r) for r in later]
    assert any(sent in t for t in texts), "the wake notice never reached the model"
    # the resumed turn's server read builder's inbox: the body came back as its result
    # (Copilot's turn may call it because the owner's allow_tools went to its wake entry)
    assert any("WAKE-BODY-7f3a" in t for t in texts), [r["reply"] for r in later]
    agent = json.loads((w.mailbox / "config.json").read_text())["agents"]["builder"]
    assert agent["session_id"] == started["session_id"]
    assert agent.get("own_server", False) is (host != "gemini")
