"""Qwen Code, OpenCode and Cline CLI against the real programs, as far as each runs
offline (docs/hosts.md says which cells are proven where, and why the others are not).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest

from . import hosts_more  # noqa: F401  (registers the hosts below in the harness)
from .conftest import VERSIONS
from .harness import World, request_text

AGENT = "quinn"


def scopes(host: str) -> list[object]:
    """Both install scopes, each test id naming the host and its version."""
    return [pytest.param(s, id=f"{host}-{VERSIONS[host]}-{s}") for s in ("project", "user")]




@pytest.mark.parametrize("scope", scopes("qwen"))
def test_qwen_accepts_the_files_and_delivers_both_ways(
    world: Callable[..., World], scope: str
) -> None:
    w = world("qwen")
    installed = w.install(AGENT, "--hooks", "--scope", scope)
    assert installed.returncode == 0, installed.stderr
    listed = w.health(r"mailslot: .* - Connected", "qwen", "mcp", "list")
    assert re.search(r"mailslot: .* - Connected", listed), listed
    waiting = w.send("boss", AGENT, "waiting for you", "hello")
    done = w.run("Do the task.")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Invalid hook event name" not in done.stderr
    asked = w.provider.model_requests()
    assert f"[mailslot] message {waiting}" in request_text(asked[0])  # the prompt hook
    assert asked[0]["reply"] == "tool:mcp__mailslot__send_message"
    (sent,) = w.inbox("observer")
    assert sent["from"] == AGENT




@pytest.mark.parametrize("version", [VERSIONS["qwen"]], ids=lambda v: f"qwen-{v}")
def test_qwen_project_server_waits_for_the_persons_approval(
    world: Callable[..., World], version: str
) -> None:
    """`install` writes no approval and says how to give it; until the person approves,
    `qwen mcp list` shows the project's server pending, and connected afterwards."""
    w = world("qwen")
    installed = w.mailslot("install", "qwen", "--agent", AGENT)  # no after_install
    assert "qwen mcp approve mailslot" in installed.stdout + installed.stderr
    pending = w.program("qwen", "mcp", "list")
    assert re.search(r"mailslot: .* - Pending approval", pending.stdout), pending.stdout
    assert not (w.home / ".qwen" / "mcpApprovals.json").exists()
    w.host.after_install(w)  # the person: `qwen mcp approve mailslot`
    listed = w.health(r"mailslot: .* - Connected", "qwen", "mcp", "list")
    assert re.search(r"mailslot: .* - Connected", listed), listed


@pytest.mark.parametrize("scope", scopes("opencode"))
def test_opencode_accepts_the_file_and_a_tool_call_delivers(
    world: Callable[..., World], scope: str
) -> None:
    # OpenCode fetches its OpenAI-compatible provider package from the npm registry on
    # first use (into the scratch HOME), as it does for any user of a local model.
    w = world("opencode")
    assert w.install(AGENT, "--scope", scope).returncode == 0
    listed = w.health(r"mailslot\s.*connected", "opencode", "mcp", "list")
    assert re.search(r"mailslot\s.*connected", listed), listed
    done = w.run("Do the task.")
    assert done.returncode == 0, done.stderr[-2000:]
    assert any(r["reply"] == "tool:mailslot_send_message" for r in w.provider.requests())
    (sent,) = w.inbox("observer")
    assert sent["from"] == AGENT


@pytest.mark.parametrize("version", [VERSIONS["cline"]], ids=lambda v: f"cline-{v}")
def test_cline_file_is_what_cline_itself_writes(world: Callable[..., World], version: str
                                                ) -> None:
    """Cline CLI has no health check, and in `cline --json` runs against the provider its
    model was never offered MCP tools (ours or any), so a tool call cannot be shown
    offline; what can be shown is that `install cline` writes exactly the entry that
    Cline's own `cline mcp add` writes."""
    ours, theirs = world("cline"), world("cline")
    assert ours.install(AGENT).returncode == 0
    rel = ".cline/data/settings/cline_mcp_settings.json"
    entry = json.loads((ours.home / rel).read_text(encoding="utf-8"))["mcpServers"]["mailslot"]
    argv = [entry["transport"]["command"], *entry["transport"]["args"]]
    added = theirs.program("cline", "mcp", "add", "mailslot", "--yes", "--json", "--", *argv)
    assert added.returncode == 0, added.stderr
    assert json.loads((theirs.home / rel).read_text(encoding="utf-8")) == \
        json.loads((ours.home / rel).read_text(encoding="utf-8"))


@pytest.mark.parametrize("scope", scopes("pi"))
def test_pi_loads_the_extension_and_delivers_both_ways(
    world: Callable[..., World], scope: str
) -> None:
    w = world("pi")
    assert w.install(AGENT, "--hooks", "--scope", scope).returncode == 0
    waiting = w.send("boss", AGENT, "waiting for you", "hello")
    done = w.run("Do the task.")
    assert done.returncode == 0, done.stderr[-2000:]
    first = w.provider.model_requests()[0]
    tools = [t["function"]["name"] for t in first["body"]["tools"]]
    assert {"mailslot_send_message", "mailslot_reply", "mailslot_mark_done"} <= set(tools)
    assert f"[mailslot] message {waiting}" in request_text(first)  # the session's first prompt
    assert first["reply"] == "tool:mailslot_send_message"
    (sent,) = w.inbox("observer")
    assert sent["from"] == AGENT
