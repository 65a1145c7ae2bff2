"""Codex CLI (``@openai/codex``): everything mailslot knows about it.

Sources: Codex's config, hooks, MCP and plugin documentation (developers.openai.com/codex),
checked against the real program offline (docs/hosts.md). Its hooks take Claude Code's
events and output shapes; it skips new or changed hooks until the person trusts them.
"""

from __future__ import annotations

import os

from ...core import jsontext
from ...core.names import SESSION_KEY
from ...host_registry.host import (
    MIDTURN,
    PROMPT,
    SERVER,
    START,
    HookFile,
    Host,
    Plugin,
    Rung,
    Start,
    option,
)
from ...host_registry.session_record import transcript_path
from ..claude import CLAUDE_STYLE_EVENTS, HOOKS, OUTPUTS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


class Codex(Host):
    name = "codex"
    title = "Codex CLI"
    program_env = ("OPENAI_*", "CODEX_HOME", "CODEX_SQLITE_HOME", "CODEX_CA_CERTIFICATE")
    markers = ("CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED")
    package = "@openai/codex"
    runtime = "codex-cli"

    mcp_path = {"project": ".codex/config.toml", "user": "~/.codex/config.toml"}
    mcp_format = "toml"
    mcp_container = "mcp_servers"
    hook_file = HookFile({"project": ".codex/hooks.json", "user": "~/.codex/hooks.json"},
                         HOOKS, 10, notes=(
                             "Codex skips new or changed hooks until you trust them: run "
                             "/hooks in Codex and approve the mailslot entries.",
                         ))
    install_notes = {"project": ("Codex reads a project's .codex/ folder only once you trust "
                                 "the project.",)}

    events = CLAUDE_STYLE_EVENTS
    outputs = OUTPUTS
    record_holds = frozenset({START, PROMPT, MIDTURN, "tool"})
    given_markers = (b'"type":"response_item"',)
    answer_markers = (b'"sampled_through_sequence":',)

    wake_ladder = (Rung("codex-queue", "0.171.0"), Rung("tmux"), Rung("codex"),
                   Rung("command"))
    """Queued into the live session (proven from 0.171.0), else typed into its pane,
    else a separate ``codex exec resume`` turn."""

    program = "codex"
    startable = True
    modes = ("read-only", "workspace-write", "danger-full-access")  # its sandbox modes
    default_allowed = ("read-only", "workspace-write")
    bypass = frozenset({"danger-full-access"})
    default_mode = "workspace-write"
    efforts = ("minimal", "low", "medium", "high", "xhigh")  # config reference
    continues = ("resume", "--last")
    mode_flag = "--sandbox"
    own_servers = True

    bypass_flags = frozenset({"--dangerously-bypass-approvals-and-sandbox",
                              "--dangerously-bypass-hook-trust", "--full-auto"})
    bypass_values = {"-a": frozenset({"never"}), "--ask-for-approval": frozenset({"never"}),
                     "-s": frozenset({"danger-full-access"}),
                     "--sandbox": frozenset({"danger-full-access"})}
    settings_flags = frozenset({"-c", "--config"})
    bypass_settings = ("approval_policy", "sandbox_mode")

    def record_of(self, payload: Mapping[str, object], env: Mapping[str, str]) -> str | None:
        """The session's rollout (``transcript_path``; its schema allows null)."""
        return transcript_path(payload)

    def server_record(self, env: Mapping[str, str], meta: Mapping[str, object],
                      cwd: str) -> str | None:
        """Its MCP server gets a cleaned environment, but every ``tools/call`` names
        its thread (``_meta.threadId``), whose rollout is
        ``~/.codex/sessions/YYYY/MM/DD/rollout-<start>-<thread>.jsonl``."""
        thread = meta.get("threadId")
        if not isinstance(thread, str) or not SESSION_KEY.fullmatch(thread):
            return None
        home = env.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex")
        return _rollout(os.path.join(home, "sessions"), thread)

    def given(self, entry: Mapping[str, Any]) -> object | None:
        """Every item of the conversation (a hook's context is a ``developer``
        message, a tool's result a ``function_call_output``) is numbered in
        ``metadata.history_sequence``: the key."""
        if entry.get("type") != "response_item":
            return None
        number = _metadata(entry).get("history_sequence")
        return number if isinstance(number, int) and number > 0 else None

    def answers(self, entry: Mapping[str, Any], given: object) -> bool:
        """A model's output item says how far the request it answered went
        (``metadata.sampled_through_sequence``): past the given item, it held it."""
        through = _metadata(entry).get("sampled_through_sequence")
        return (isinstance(through, int) and isinstance(given, int)
                and 0 < given <= through)

    def remote_entry(self, endpoint: str, secret_env: str) -> dict[str, Any]:
        # config.toml: the token is read from the named variable
        return {"url": endpoint, "bearer_token_env_var": secret_env}

    def plugin(self, description: str) -> Plugin:
        """Codex asks nothing when a plugin is enabled, so the server and hooks take
        ``MAILSLOT_AGENT`` (and ``MAILSLOT_DIR``) from the environment Codex was started
        in."""
        manifest = {
            "mcpServers": "./.mcp.json", "hooks": "./hooks/hooks.json",
            "interface": {"displayName": "mailslot", "shortDescription": description,
                          "category": "Coding"},
        }
        server = {"command": "mailslot", "args": ["serve"],
                  "env_vars": ["MAILSLOT_AGENT", "MAILSLOT_DIR"]}
        return Plugin(".codex-plugin", manifest, server,
                      lambda event: f"mailslot hook codex {event}",
                      ".agents/plugins/marketplace.json", {
                          "name": "mailslot", "interface": {"displayName": "mailslot"},
                          "plugins": [{"name": "mailslot",
                                       "source": {"source": "local", "path": "./plugins/codex"},
                                       "policy": {"installation": "AVAILABLE",
                                                  "authentication": "ON_INSTALL"},
                                       "category": "Coding"}]})

    def argv(self, executable: str, start: Start) -> list[str]:
        argv = [executable] + (["exec"] if start.handoff == "background" else [])
        argv += option("--model", start.model) + option("--sandbox", start.permission_mode)
        if start.effort is not None:
            argv += ["-c", f"model_reasoning_effort={start.effort}"]
        return [*argv, *start.extra, "--", start.prompt]

    def session_server(self, command: str, args: list[str], *,
                       url_store: bool) -> list[str] | None:
        """``-c mcp_servers.mailslot.command=...`` and ``...args=[...]``: config
        overrides for this run only. Codex passes its servers only the variables listed
        in ``env_vars``, so a store URL's ``MAILSLOT_STORE`` is listed."""
        key = f"mcp_servers.{SERVER}"
        found = [f"{key}.command={jsontext.dumps(command)}", f"{key}.args={jsontext.dumps(args)}"]
        if url_store:
            found.append(f'{key}.env_vars=["MAILSLOT_STORE"]')
        return [part for value in found for part in ("-c", value)]


def _metadata(entry: Mapping[str, Any]) -> Mapping[str, Any]:
    found = entry.get("metadata")
    return found if isinstance(found, dict) else {}


def _rollout(sessions: str, thread: str) -> str | None:
    """The rollout of ``thread`` under ``sessions/YYYY/MM/DD/``, newest days first."""
    suffix = f"-{thread}.jsonl"
    for year, month, day in _days(sessions):
        folder = os.path.join(sessions, year, month, day)
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if name.startswith("rollout-") and name.endswith(suffix):
                return os.path.join(folder, name)
    return None


def _days(sessions: str) -> list[tuple[str, str, str]]:
    """The day folders under ``sessions``, newest first."""
    found = []
    for year in _listed(sessions):
        for month in _listed(os.path.join(sessions, year)):
            found += [(year, month, day)
                      for day in _listed(os.path.join(sessions, year, month))]
    return sorted(found, reverse=True)


def _listed(folder: str) -> list[str]:
    try:
        return [name for name in os.listdir(folder) if name.isdigit()]
    except OSError:
        return []


HOST = Codex()
