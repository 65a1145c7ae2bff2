"""What each agent host reads: where its MCP and hook settings live, and their shapes.

Sources and caveats are in docs/hosts.md. Paths starting ``~/`` are under the home
folder; the others are relative to the project (the git checkout holding the working
folder, else the working folder itself).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Scope = Literal["project", "user"]
SCOPES: tuple[Scope, ...] = ("project", "user")
HookStyle = Literal["groups", "cursor", "copilot"]
ServerStyle = Literal["plain", "opencode", "cline"]
"""How a host spells a stdio server: ``command`` + ``args`` (most), one ``command``
list (OpenCode), or ``command`` + ``args`` inside ``transport`` (Cline)."""

CLAUDE_HOOK_FILES = (".claude/settings.local.json", ".claude/settings.json",
                     "~/.claude/settings.json")


@dataclass(frozen=True)
class Hook:
    """One host event and the ``mailslot hook HOST EVENT`` event that serves it."""

    event: str
    ours: str
    matcher: str | None = None


@dataclass(frozen=True)
class HookFile:
    """Where a host reads command hooks, in which shape, and with which time unit."""

    path: dict[Scope, str]
    style: HookStyle
    hooks: tuple[Hook, ...]
    timeout: int  # in the host's unit (Gemini: milliseconds; the others: seconds)
    named: bool = False  # Gemini names each handler (for /hooks enable|disable)
    also_runs: tuple[str, ...] = ()  # Claude hook files this host runs as well
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Host:
    name: str
    title: str
    default_scope: Scope
    mcp_path: dict[Scope, str]
    mcp_format: Literal["json", "toml", "pi-extension"]
    mcp_fields: dict[str, Any] = field(default_factory=dict)  # beside command and args
    hooks: HookFile | None = None
    notes: dict[Scope, tuple[str, ...]] = field(default_factory=dict)
    mcp_container: str = "mcpServers"  # the key holding the servers
    mcp_style: ServerStyle = "plain"


_CLAUDE_STYLE = (
    Hook("SessionStart", "session-start", "startup|resume|clear|compact"),
    Hook("UserPromptSubmit", "user-prompt-submit"),
    Hook("Stop", "stop"),
    Hook("PostToolUse", "post-tool-use"),
)
_QWEN_STYLE = (  # no SessionStart matcher: every source, whatever Qwen compares it as
    Hook("SessionStart", "session-start"), *_CLAUDE_STYLE[1:],
)
_HOOK_TRUST = "Claude Code runs project hooks only once the folder's trust dialog is accepted."

HOSTS: dict[str, Host] = {h.name: h for h in (
    Host(
        "claude", "Claude Code", "project",
        {"project": ".mcp.json", "user": "~/.claude.json"}, "json", {"type": "stdio"},
        HookFile({"project": ".claude/settings.local.json", "user": "~/.claude/settings.json"},
                 "groups", _CLAUDE_STYLE, 10, notes=(
                     _HOOK_TRUST,
                     "Cursor and Copilot CLI also run the hooks in Claude Code's settings "
                     "files; there they act for this agent too (see docs/hosts.md).",
                 )),
        {"project": (
            "Claude Code asks once to approve the project's MCP server 'mailslot' "
            "(\"New MCP server found in .mcp.json\"): approve it. If it was declined "
            "before, run `claude mcp reset-project-choices`.",
        )},
    ),
    Host(
        "codex", "Codex CLI", "project",
        {"project": ".codex/config.toml", "user": "~/.codex/config.toml"}, "toml",
        mcp_container="mcp_servers",
        hooks=HookFile({"project": ".codex/hooks.json", "user": "~/.codex/hooks.json"},
                       "groups", _CLAUDE_STYLE, 10, notes=(
                           "Codex skips new or changed hooks until you trust them: run "
                           "/hooks in Codex and approve the mailslot entries.",
                       )),
        notes={"project": ("Codex reads a project's .codex/ folder only once you trust "
                           "the project.",)},
    ),
    Host(
        "gemini", "Gemini CLI", "project",
        {"project": ".gemini/settings.json", "user": "~/.gemini/settings.json"}, "json",
        hooks=HookFile(
            {"project": ".gemini/settings.json", "user": "~/.gemini/settings.json"},
            "groups",
            # Gemini compares lifecycle matchers as exact strings ("startup|resume"
            # matches nothing): no matcher, so every source runs it.
            (Hook("SessionStart", "session-start"),
             Hook("BeforeAgent", "before-agent"), Hook("AfterAgent", "after-agent"),
             Hook("AfterTool", "after-tool")),
            10_000, named=True, notes=(
                "Gemini CLI runs hooks when hooksConfig.enabled is on (the default in "
                "current versions; older ones need tools.enableHooks).",
            )),
        notes={"project": ("Gemini CLI reads project settings only in trusted folders.",)},
    ),
    Host(
        "antigravity", "Antigravity", "project",
        {"project": ".agents/mcp_config.json",
         "user": "~/.gemini/antigravity/mcp_config.json"}, "json",
        notes={scope: ("Antigravity does not document this file's location; check that "
                       "'mailslot' shows under Manage MCP Servers.",) for scope in SCOPES},
    ),
    Host(
        "cursor", "Cursor", "project",
        {"project": ".cursor/mcp.json", "user": "~/.cursor/mcp.json"}, "json",
        {"type": "stdio"},
        HookFile({"project": ".cursor/hooks.json", "user": "~/.cursor/hooks.json"}, "cursor",
                 (Hook("sessionStart", "session-start"), Hook("stop", "stop")), 10,
                 also_runs=CLAUDE_HOOK_FILES),
    ),
    Host(
        "copilot", "Copilot CLI", "user",
        {"project": ".mcp.json", "user": "~/.copilot/mcp-config.json"}, "json",
        {"type": "stdio", "tools": ["*"]},
        HookFile({"project": ".github/hooks/mailslot.json",
                  "user": "~/.copilot/hooks/mailslot.json"}, "copilot",
                 (Hook("sessionStart", "session-start"), Hook("agentStop", "stop"),
                  Hook("postToolUse", "post-tool-use")), 10,
                 also_runs=CLAUDE_HOOK_FILES[:2]),
        {"project": (
            "Copilot CLI reads the project's .mcp.json only in a trusted folder, and not "
            "with -p unless GITHUB_COPILOT_PROMPT_MODE_WORKSPACE_MCP=true. Claude Code "
            "reads this file too: both then speak as the same agent.",
        )},
    ),
    Host(
        "qwen", "Qwen Code", "project",
        {"project": ".qwen/settings.json", "user": "~/.qwen/settings.json"}, "json",
        hooks=HookFile({"project": ".qwen/settings.json", "user": "~/.qwen/settings.json"},
                       "groups", _QWEN_STYLE, 10_000),
        notes={"project": ("With folder trust on (security.folderTrust.enabled), Qwen "
                           "Code reads project settings and hooks only in trusted folders.",)},
    ),
    Host(
        "opencode", "OpenCode", "project",
        {"project": "opencode.json", "user": "~/.config/opencode/opencode.json"}, "json",
        {"type": "local", "enabled": True}, mcp_container="mcp", mcp_style="opencode",
        notes={scope: ("OpenCode has no command hooks (its plugins are JavaScript); its "
                       "agents read mail through the MCP tools. `opencode mcp list` "
                       "checks the server.",) for scope in SCOPES},
    ),
    Host(
        "pi", "Pi", "project",
        {"project": ".pi/extensions/mailslot.ts", "user": "~/.pi/agent/extensions/mailslot.ts"},
        "pi-extension",
        notes={scope: ("Pi has no MCP client: this is a Pi extension (mailslot's tools, and "
                       "with --hooks the mail hooks), loaded at Pi's next start or /reload.",)
               for scope in SCOPES},
    ),
    Host(
        "cline", "Cline CLI", "user",
        {"project": ".cline/data/settings/cline_mcp_settings.json",
         "user": "~/.cline/data/settings/cline_mcp_settings.json"}, "json",
        mcp_style="cline",
        notes={"project": ("Cline reads this file only when started with "
                           "`--data-dir .cline/data` (it keeps MCP settings per data "
                           "folder, not per project).",)},
    ),
    # Grok Build (xAI's `grok`; docs.x.ai/build): MCP only. Its hooks are
    # documented, but not that a hook's output reaches the model (docs/hosts.md).
    Host(
        "grok", "Grok Build", "project",
        {"project": ".grok/config.toml", "user": "~/.grok/config.toml"}, "toml",
        mcp_container="mcp_servers",
        notes={"project": (
            "Grok Build starts a project's MCP servers only once you trust the folder "
            "(/hooks-trust in Grok, or start it with --trust).",
        )},
    ),
)}

HOST_NAMES = tuple(HOSTS)
