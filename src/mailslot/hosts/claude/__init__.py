"""Claude Code (``@anthropic-ai/claude-code``): everything mailslot knows about it.

Sources: Claude Code's settings, hooks, MCP, plugins and channels references
(code.claude.com/docs), checked against the real program offline (docs/hosts.md says
which version proved what). Hooks run as ``/bin/sh -c CMD``; a hook's output reaches the
model as ``additionalContext`` and a Stop hook's ``decision: block`` continues the turn;
text past 10,000 characters is cut (:attr:`~.host.Host.context_limit`).
"""

from __future__ import annotations

import os
import sys

from ...core import jsontext
from ...core.names import SESSION_KEY
from ...host_registry.host import (
    MIDTURN,
    PROMPT,
    SERVER,
    START,
    STOP,
    Hook,
    HookFile,
    Host,
    Plugin,
    Rung,
    Start,
    context,
    decision,
    option,
)
from ...host_registry.session_record import transcript_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

CLAUDE_STYLE_EVENTS = {"session-start": START, "user-prompt-submit": PROMPT, "stop": STOP,
                       "post-tool-use": MIDTURN}
"""``mailslot hook HOST EVENT`` events of a host whose hooks are Claude Code's (its events
and output shapes have been copied by several hosts)."""
HOOK_FILES = (".claude/settings.local.json", ".claude/settings.json", "~/.claude/settings.json")
"""Every settings file Claude Code runs hooks from (other hosts run some of them too)."""
HOOKS = (
    Hook("SessionStart", "session-start", "startup|resume|clear|compact"),
    Hook("UserPromptSubmit", "user-prompt-submit"),
    Hook("Stop", "stop"),
    Hook("PostToolUse", "post-tool-use"),
)
OUTPUTS = {START: context("SessionStart"), PROMPT: context("UserPromptSubmit"),
           STOP: decision("block"), MIDTURN: context("PostToolUse")}
"""Claude Code's hook output shapes (other hosts take the same)."""
HEADLESS = "sdk-cli"
"""``CLAUDE_CODE_ENTRYPOINT`` under ``claude -p``: a waiter there would keep it running."""
CHANNEL_CAPABILITY = "claude/channel"
CHANNEL_METHOD = "notifications/claude/channel"
"""Channels (a research preview): a server declaring the experimental capability may
send this notification into the session (``serve --channel``)."""
_MCP_WAIT = {"MCP_CONNECTION_NONBLOCKING": "false", "MCP_CONNECT_TIMEOUT_MS": "60000"}
"""``claude -p`` may ask its model before MCP servers are up (5 s by default, then it
goes on without them): a started session exists to use mailslot, so it waits for them
(up to a minute), unless the caller's environment already says how long."""
_AGENT = "${user_config.agent}"
_MAILBOX = "${user_config.mailbox}"
_HOOK_AGENT = '"$CLAUDE_PLUGIN_OPTION_AGENT"'
_HOOK_MAILBOX = '"$CLAUDE_PLUGIN_OPTION_MAILBOX"'
"""A plugin hook's command reads the values from its environment: 2.1.332 refuses a
shell-form hook command holding ``${user_config.*}`` (the value would be parsed by the
shell) and sets ``CLAUDE_PLUGIN_OPTION_<KEY>`` for it instead."""
PLUGIN_TOOLS = "mcp__plugin_mailslot_mailslot__{}"
"""How the model sees the plugin's server's tools (plugin servers are prefixed)."""
PEER_SINCE = "2.1.224"
"""The first version with cross-session messaging (``ListAgents``, ``SendMessage``)."""
PEER_PROTOCOL = 1
"""The registry's ``peerProtocol`` whose frames mailslot speaks (docs/claude-peers.md)."""
PEER_GRACE = 10.0
"""Seconds the waiter leaves new mail to the watcher's ``claude-peer`` wake first: more
than the wake takes to hear a hold or refusal (:data:`.door.RECEIPT_SECONDS`), so the two never
both tell a session."""
OWN_MESSAGING = "SendMessage"
"""Claude Code's own cross-session tool: it reaches Claude sessions, not mailslot agents."""


class Claude(Host):
    name = "claude"
    title = "Claude Code"
    program_env = ("ANTHROPIC_*", "CLAUDE_CODE_*", "CLAUDE_CONFIG_DIR", "DISABLE_*", "MCP_*",
                   "API_TIMEOUT_MS", "MAX_THINKING_TOKENS", "BASH_DEFAULT_TIMEOUT_MS",
                   "BASH_MAX_TIMEOUT_MS", "AWS_REGION", "AWS_PROFILE", "AWS_BEARER_TOKEN_BEDROCK",
                   "CLOUD_ML_REGION", "VERTEX_REGION_*", "GOOGLE_APPLICATION_CREDENTIALS")
    markers = ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SSE_PORT", "CLAUDE_PROJECT_DIR",
               "CLAUDE_ENV_FILE", "CLAUDE_PLUGIN_ROOT")
    package = "@anthropic-ai/claude-code"
    runtime = "claude-code"
    context_limit = 10_000

    mcp_path = {"project": ".mcp.json", "user": "~/.claude.json"}
    mcp_fields = {"type": "stdio"}
    hook_file = HookFile(
        {"project": ".claude/settings.local.json", "user": "~/.claude/settings.json"},
        HOOKS, 10, notes=(
            "Claude Code runs project hooks only once the folder's trust dialog is accepted.",
            "Cursor and Copilot CLI also run the hooks in Claude Code's settings files; "
            "there they act for this agent too (see docs/hosts.md).",
        ))
    install_notes = {"project": (
        "Claude Code asks once to approve the project's MCP server 'mailslot' "
        "(\"New MCP server found in .mcp.json\"): approve it. If it was declined before, "
        "run `claude mcp reset-project-choices`.",
    )}
    install_wakes = {"channel": "claude-channel"}
    wake_ladder = (Rung("claude-peer", PEER_SINCE, waiter=True, grace=PEER_GRACE),
                   Rung("claude-rewake", "2.1.197", waiter=True), Rung("tmux"),
                   Rung("claude"), Rung("command"))
    """Claude Code's own cross-session door into the open session first (the watcher
    hands it the notice; the waiter, registered too, wakes the session if the door did
    not take it within the grace); then the waiter alone (the oldest version it was
    proven on: 2.1.197); typing into its pane next, then a separate headless turn.
    Channels are a research preview behind a flag the person passes: only ``--channel``
    picks them."""
    channel = (CHANNEL_CAPABILITY, CHANNEL_METHOD)
    wake_hook = "wait"

    events = CLAUDE_STYLE_EVENTS
    outputs = OUTPUTS
    tool_names = "mcp__mailslot__{}"  # deferred in 2.1.332: ToolSearch selects this
    record_holds = frozenset({START, PROMPT, MIDTURN, "tool"})
    given_markers = (b'"type":"user"', b'"type":"api-request-blob"',
                     b'"type":"hook_additional_context"')
    answer_markers = (b'"type":"assistant"',)
    lends_to = ("cursor", "copilot")  # both run the hooks in these settings files

    program = "claude"
    startable = True
    modes = ("default", "acceptEdits", "plan", "auto", "dontAsk", "bypassPermissions")
    default_allowed = ("auto", "default", "acceptEdits", "plan")
    bypass = frozenset({"bypassPermissions"})
    default_mode = "default"
    efforts = ("low", "medium", "high", "xhigh", "max")  # claude --help, 2.1.197
    default_names = True
    session_ids = True
    wake_method = "claude"
    continues = ("--continue",)
    handoffs = ("background", "tmux", "desktop")
    desktop_app = "Claude"
    desktop_max_prompt = 14_000  # the app truncates a link's prompt at about this
    start_env = _MCP_WAIT
    own_servers = True

    bypass_flags = frozenset({"--dangerously-skip-permissions",
                              "--allow-dangerously-skip-permissions"})
    bypass_values = {"--permission-mode": frozenset({"bypassPermissions"})}
    settings_args = frozenset({"--settings"})  # a settings file's path or its JSON
    settings_bypass = {"permissions.defaultMode": frozenset({"bypassPermissions"})}

    def waits(self, env: Mapping[str, str]) -> bool:
        """Not under ``claude -p``: it waits for background hooks before it exits, and a
        run that is over cannot be woken anyway."""
        return env.get("CLAUDE_CODE_ENTRYPOINT") != HEADLESS

    def remote_entry(self, endpoint: str, secret_env: str) -> dict[str, Any]:
        # .mcp.json expands ${VAR} in url and headers
        return {"type": "http", "url": endpoint,
                "headers": {"Authorization": f"Bearer ${{{secret_env}}}"}}

    def install_advice(self, method: str) -> str:
        if method == "claude-channel":
            return ("start Claude Code with: claude --dangerously-load-development-channels "
                    f"server:{SERVER}")
        return ""

    def answer_note(self, tools: str, bridged: Sequence[str] = ()) -> str:
        """Which tool answers: mailslot's, always; ``SendMessage`` too, but only to an
        agent a running bridge of this mailbox lists (``bridged``, looked up by the
        caller at each hook and wake), and the note names them."""
        ours = (f"mailslot: MCP tool `{tools.format('reply')}` or "
                f"`{tools.format('send_message')}`, or the command shown")
        if not bridged:
            return (f"Answer mailslot mail only with {ours}. Claude Code's own "
                    f"`{OWN_MESSAGING}` does not reach mailslot agents here (no mailslot "
                    "bridge runs): it reaches only Claude sessions on this machine.")
        return (f"Answer mailslot mail with {ours}; or with Claude Code's own "
                f"`{OWN_MESSAGING}` to an agent mailslot's bridge lists in `ListAgents` "
                f"(now: {', '.join(bridged)}), which arrives as mail from you. "
                f"`{OWN_MESSAGING}` to any other name reaches only Claude sessions, not "
                "mailslot.")

    def record_of(self, payload: Mapping[str, object], env: Mapping[str, str]) -> str | None:
        """Every hook's input names the session's transcript (``transcript_path``); the
        file appears only once the first request was sent (2.1.332)."""
        return transcript_path(payload)

    def server_record(self, env: Mapping[str, str], meta: Mapping[str, object],
                      cwd: str) -> str | None:
        """``~/.claude/projects/<the project's folder, every character but a letter or
        digit made ->/<CLAUDE_CODE_SESSION_ID>.jsonl``, or wherever in ``projects/``
        a file of that session is (the folder's spelling is Claude Code's own)."""
        session = env.get("CLAUDE_CODE_SESSION_ID", "")
        if not SESSION_KEY.fullmatch(session):
            return None
        home = env.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
        projects = os.path.join(home, "projects")
        folder = "".join(c if c.isascii() and c.isalnum() else "-"
                         for c in env.get("CLAUDE_PROJECT_DIR") or cwd)
        path = os.path.join(projects, folder, f"{session}.jsonl")
        if os.path.isfile(path):
            return path
        try:
            with os.scandir(projects) as found:
                for entry in found:
                    other = os.path.join(entry.path, f"{session}.jsonl")
                    if os.path.isfile(other):
                        return other
        except OSError:
            pass
        return path

    def given(self, entry: Mapping[str, Any]) -> object | None:
        """What was put into a request: a message of one (``api-request-blob``, written
        once it was sent), a ``user`` line (a prompt, a tool's result) or a hook's
        context as the host attached it; never ``hook_success`` (the hook's raw
        output, kept even when no context came of it)."""
        kind = entry.get("type")
        if kind in ("user", "api-request-blob"):
            return True
        attached = entry.get("attachment")
        if kind == "attachment" and isinstance(attached, dict) \
                and attached.get("type") == "hook_additional_context":
            return True
        return None

    def answers(self, entry: Mapping[str, Any], given: object) -> bool:
        """A model's answer: an ``assistant`` line that is not the host's own note of a
        failed request (``isApiErrorMessage``, model ``<synthetic>``)."""
        if entry.get("type") != "assistant" or entry.get("isApiErrorMessage"):
            return False
        message = entry.get("message")
        return not (isinstance(message, dict) and message.get("model") == "<synthetic>")

    def tools(self, env: Mapping[str, str]) -> str:
        """A plugin's hook (``CLAUDE_PLUGIN_ROOT`` is set for it) names the plugin's tools."""
        return PLUGIN_TOOLS if env.get("CLAUDE_PLUGIN_ROOT") else self.tool_names

    def plugin(self, description: str) -> Plugin:
        """It asks for the agent and mailbox when the plugin is enabled (``userConfig``:
        ``${user_config.NAME}`` in the server's arguments, the environment in hooks)."""
        tail = f"--agent {_HOOK_AGENT} --dir {_HOOK_MAILBOX}"
        ask = {
            "agent": {"type": "string", "title": "Agent name",
                      "description": "The name this Claude Code reads and sends mail as "
                                     "(1-64 of a-z, 0-9 and -).", "required": True},
            "mailbox": {"type": "string", "title": "Mailbox folder",
                        "description": "The mailbox every agent on this machine shares.",
                        "default": "~/mailslot"},
        }
        server = {"type": "stdio", "command": "mailslot",
                  "args": ["serve", "--agent", _AGENT, "--dir", _MAILBOX]}
        return Plugin(".claude-plugin", {"userConfig": ask}, server,
                      lambda event: f"mailslot hook claude {event} {tail}",
                      ".claude-plugin/marketplace.json", {
                          "name": "mailslot", "owner": {"name": "mailslot"},
                          "plugins": [{"name": "mailslot", "source": "./plugins/claude",
                                       "description": description}]})

    def argv(self, executable: str, start: Start) -> list[str]:
        argv = [executable] + (["-p"] if start.handoff == "background" else [])
        argv += option("--model", start.model) + option("--effort", start.effort)
        argv += option("--permission-mode", start.permission_mode)
        argv += option("--session-id", start.session_id) + option("--name", start.name)
        return [*argv, *start.extra, "--", start.prompt]

    def refuse_folder(self, folder: str) -> str | None:
        """Claude Code runs a folder's hooks and MCP servers only once its trust dialog
        was accepted there: a start anywhere else would hang on that dialog."""
        from ...core.durable import read_file
        from ...core.errors import UnsafePath

        try:  # a person's own settings: a link is followed, a FIFO never waited on
            data = jsontext.loads(read_file(os.path.join(os.path.expanduser("~"),
                                                         ".claude.json"), follow=True))
            projects = data.get("projects", {}) if isinstance(data, dict) else {}
            entry = projects.get(folder) if isinstance(projects, dict) else None
        except (OSError, ValueError, UnsafePath):
            entry = None
        if isinstance(entry, dict) and entry.get("hasTrustDialogAccepted") is True:
            return None
        return (f"{folder} is not a folder you trusted in Claude Code (open claude there "
                "once and accept the trust dialog)")

    def desktop_opener(self) -> list[str] | None:
        """How to open a ``claude://`` link here, if the desktop app is installed (macOS
        and Windows only: there is no Linux desktop app)."""
        home = os.path.expanduser("~")
        if sys.platform == "darwin":
            apps = ["/Applications/Claude.app", os.path.join(home, "Applications", "Claude.app")]
            return ["open"] if any(os.path.isdir(a) for a in apps) else None
        if sys.platform == "win32":
            local = os.environ.get("LOCALAPPDATA", "")
            if local and os.path.isdir(os.path.join(local, "AnthropicClaude")):
                return ["rundll32", "url.dll,FileProtocolHandler"]
        return None

    def desktop_link(self, prompt: str, folder: str) -> str:
        """``claude://code/new?q=PROMPT&folder=FOLDER``: a new Code session in the desktop
        app with the prompt prefilled (not sent: the person reads it and sends it)."""
        from urllib.parse import quote, urlencode

        return "claude://code/new?" + urlencode({"q": prompt, "folder": folder},
                                                quote_via=quote)

    def session_server(self, command: str, args: list[str], *,
                       url_store: bool) -> list[str] | None:
        """``--mcp-config JSON``: servers given there win over ``.mcp.json``'s."""
        entry = {"command": command, "args": args}
        return [f"--mcp-config={jsontext.dumps({'mcpServers': {SERVER: entry}})}"]


def sessions_folder(env: Mapping[str, str]) -> str:
    """Where Claude Code keeps its live sessions' records."""
    home = env.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
    return os.path.join(home, "sessions")


HOST = Claude()
