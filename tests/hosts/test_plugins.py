"""The plugins under plugins/, proved against the real Claude Code and Codex: the host
accepts the plugin, starts its MCP server as the configured agent (a tool call delivers
with that sender) and runs its hooks (mail waiting before the session reaches the model).

The plugins run ``mailslot`` from PATH, as their docs ask, so these runs put it there.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import VERSIONS
from .harness import MAILSLOT, World, request_text

REPO = Path(__file__).resolve().parents[2]
AGENT = "plugged"


def _with_mailslot_on_path(w: World) -> None:
    w.env["PATH"] = f"{Path(MAILSLOT).parent}{os.pathsep}{w.env['PATH']}"




def _proves_mail_both_ways(w: World, waiting: str) -> None:
    """The waiting mail reached the first request; the model's call sent as AGENT."""
    first = w.provider.model_requests()[0]
    assert f"[mailslot] message {waiting}" in request_text(first)
    (sent,) = w.inbox("observer")
    assert sent["from"] == AGENT


@pytest.mark.parametrize("version", [VERSIONS["claude"]], ids=lambda v: f"claude-{v}")
def test_claude_validates_and_loads_the_plugin(world: Callable[..., World], version: str
                                               ) -> None:
    w = world("claude")
    _with_mailslot_on_path(w)
    plugin = REPO / "plugins" / "claude"
    checked = w.program("claude", "plugin", "validate", str(plugin))
    assert checked.returncode == 0 and "Validation passed" in checked.stdout, checked.stdout
    assert "error" not in checked.stdout.lower()
    settings = w.home / ".claude" / "settings.json"
    doc = json.loads(settings.read_text(encoding="utf-8"))
    # What enabling the plugin asks for (userConfig), saved where Claude Code saves it:
    doc["pluginConfigs"] = {"mailslot@inline": {"options": {
        "agent": AGENT, "mailbox": str(w.mailbox)}}}
    doc["permissions"]["allow"].append("mcp__plugin_mailslot_mailslot__send_message")
    settings.write_text(json.dumps(doc), encoding="utf-8")
    waiting = w.send("boss", AGENT, "waiting for you", "hello")
    done = w.run("", argv=["claude", "--plugin-dir", str(plugin), "-p", "Do the task."])
    assert done.returncode == 0, done.stderr[-2000:]
    _proves_mail_both_ways(w, waiting)
    # The plugin's hook names the plugin's own tool, the name the model can load.
    first = request_text(w.provider.model_requests()[0])
    assert "MCP tool `mcp__plugin_mailslot_mailslot__reply`" in first


@pytest.mark.parametrize("version", [VERSIONS["codex"]], ids=lambda v: f"codex-{v}")
def test_codex_installs_the_plugin_from_the_marketplace(world: Callable[..., World],
                                                        version: str) -> None:
    w = world("codex")
    _with_mailslot_on_path(w)
    w.env.update(MAILSLOT_AGENT=AGENT, MAILSLOT_DIR=str(w.mailbox))
    added = w.program("codex", "plugin", "marketplace", "add", str(REPO))
    assert added.returncode == 0, added.stderr[-2000:]
    installed = w.program("codex", "plugin", "add", "mailslot@mailslot")
    assert installed.returncode == 0 and "Added plugin `mailslot`" in installed.stdout, \
        installed.stderr[-2000:]
    waiting = w.send("boss", AGENT, "waiting for you", "hello")
    # Codex runs a plugin's hooks once they are trusted in /hooks; this run skips that
    # review with the flag that bypasses hook trust only.
    done = w.run("Do the task.", "--dangerously-bypass-hook-trust")
    assert done.returncode == 0, done.stderr[-2000:]
    _proves_mail_both_ways(w, waiting)


