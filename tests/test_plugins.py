"""The Claude Code and Codex plugins under plugins/: current, and the same hooks as install."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from mailslot import host_registry as hosts
from mailslot.frontends.install.plugins import plugin_files
from support import run_cli

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("rel", sorted(plugin_files()))
def test_checked_in_plugin_files_are_current(rel: str) -> None:
    path = ROOT / rel
    assert path.exists(), f"{rel} is missing: run scripts/gen_plugins.py"
    assert path.read_text(encoding="utf-8") == plugin_files()[rel], \
        f"{rel} is stale: run scripts/gen_plugins.py"


@pytest.mark.parametrize("host", ["claude", "codex"])
def test_plugin_hooks_are_the_installed_hooks_without_machine_paths(host: str) -> None:
    hooks = json.loads(plugin_files()[f"plugins/{host}/hooks/hooks.json"])["hooks"]
    spec = hosts.host(host).hook_file
    assert spec is not None
    assert list(hooks) == [h.event for h in spec.hooks]
    for hook in spec.hooks:
        (group,) = hooks[hook.event]
        assert group.get("matcher") == hook.matcher
        (handler,) = group["hooks"]
        assert handler["command"].startswith(f"mailslot hook {host} {hook.ours}")
        assert "/" not in handler["command"].split(" --dir ")[0]  # mailslot from PATH


def test_claude_plugin_asks_for_the_agent_and_uses_it_everywhere() -> None:
    files = plugin_files()
    manifest = json.loads(files["plugins/claude/.claude-plugin/plugin.json"])
    assert manifest["userConfig"]["agent"]["required"] is True
    assert "hooks" not in manifest and "mcpServers" not in manifest  # found by convention
    server = json.loads(files["plugins/claude/.mcp.json"])["mcpServers"]["mailslot"]
    assert server["args"][:3] == ["serve", "--agent", "${user_config.agent}"]
    hooks = json.loads(files["plugins/claude/hooks/hooks.json"])["hooks"]
    commands = [h["command"] for groups in hooks.values() for g in groups for h in g["hooks"]]
    # Hooks read the values from the environment Claude Code gives them (it refuses a
    # shell-form command holding ${user_config.*}: the value would be parsed by the shell).
    assert commands and all('--agent "$CLAUDE_PLUGIN_OPTION_AGENT" --dir '
                            '"$CLAUDE_PLUGIN_OPTION_MAILBOX"' in c for c in commands)
    assert not any("${user_config" in c for c in commands)


def test_marketplaces_point_at_the_plugins() -> None:
    files = plugin_files()
    claude = json.loads(files[".claude-plugin/marketplace.json"])
    codex = json.loads(files[".agents/plugins/marketplace.json"])
    assert claude["plugins"][0]["source"] == "./plugins/claude"
    assert codex["plugins"][0]["source"]["path"] == "./plugins/codex"
    for rel in ("plugins/claude/.claude-plugin/plugin.json",
                "plugins/codex/.codex-plugin/plugin.json"):
        assert json.loads(files[rel])["name"] == "mailslot"


def _timings(hooks: dict[str, Any]) -> dict[str, list[tuple[object, object]]]:
    """Each event's (matcher, timeout) pairs, of mailslot's own hooks."""
    return {event: [(group.get("matcher"), handler.get("timeout"))
                    for group in groups for handler in group["hooks"]
                    if "mailslot hook " in handler["command"]]
            for event, groups in hooks.items()}


@pytest.mark.parametrize("host", ["claude", "codex"])
def test_plugin_hooks_have_the_events_matchers_and_timeouts_install_writes(
        host: str, tmp_path: Path) -> None:
    """The real ``mailslot install HOST --hooks`` in a project, against the plugin."""
    project = tmp_path / "alice"
    (project / ".git").mkdir(parents=True)
    done = run_cli("--agent", "alice", "install", host, "--hooks", cwd=project,
                   env={**os.environ, "MAILSLOT_DIR": str(tmp_path / "mailbox")})
    assert done.returncode == 0, done.stderr
    spec = hosts.host(host).hook_file
    assert spec is not None
    installed = json.loads((project / spec.path["project"]).read_text())["hooks"]
    plugin = json.loads(plugin_files()[f"plugins/{host}/hooks/hooks.json"])["hooks"]
    expected = _timings(installed)
    assert _timings(plugin) == expected
    assert all(timeout is not None for pairs in expected.values() for _, timeout in pairs)
