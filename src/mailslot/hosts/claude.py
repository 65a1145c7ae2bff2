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

from ..core import jsontext
from .host import (
    CLAUDE_STYLE_EVENTS,
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

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

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


class Claude(Host):
    name = "claude"
    title = "Claude Code"
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
    wake_ladder = (Rung("claude-rewake", "2.1.197", waiter=True), Rung("tmux"),
                   Rung("claude"), Rung("command"))
    """The waiter wakes the open session itself (the oldest version it was proven on:
    2.1.197); typing into its pane comes next, then a separate headless turn. Channels
    are a research preview behind a flag the person passes: only ``--channel`` picks them."""
    channel = (CHANNEL_CAPABILITY, CHANNEL_METHOD)
    wake_hook = "wait"

    events = CLAUDE_STYLE_EVENTS
    outputs = OUTPUTS
    tool_names = "mcp__mailslot__{}"  # deferred in 2.1.332: ToolSearch selects this
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
        try:
            with open(os.path.join(os.path.expanduser("~"), ".claude.json"),
                      encoding="utf-8") as f:
                data = jsontext.loads(f.read())
            projects = data.get("projects", {}) if isinstance(data, dict) else {}
            entry = projects.get(folder) if isinstance(projects, dict) else None
        except (OSError, ValueError):
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

    def wake_methods(self) -> Sequence[type]:
        return _wake_methods()


def _wake_methods() -> list[type]:
    """Built on first use, so that a hook, which needs only the facts above, never
    loads the wake machinery."""
    from ..wake.methods import OK, Job, Outcome, ResumeMethod, WaiterMethod, WakeMethod

    class ClaudeMethod(ResumeMethod):
        name = "claude"
        host = "claude"
        program = "claude"
        summary = "resumes a Claude Code session: claude -p NOTICE --resume SESSION_ID"
        needs = ("`claude` on the watcher's PATH, logged in", "the session's id (`session_id`)")
        limits = (
            "runs a separate headless turn in that session, not inside an open terminal",
            "keeps Claude's permission prompts: in -p mode a tool that needs approval is "
            "refused",
        )

        def resume(self, job: Job, session: str) -> list[str]:
            return [self.executable, "-p", job.notice, "--resume", session]


    class ClaudeRewakeMethod(WaiterMethod):
        """The session's own waiter hook wakes it (``mailslot hook claude wait``)."""

        name = "claude-rewake"
        host = "claude"
        summary = ("Claude Code's background waiter hook wakes the open session itself, within "
                   "a second, without typing into the terminal")
        needs = ("mailslot install claude --hooks --wake --agent NAME (registers the waiter "
                 "and chooses this method)", "a Claude Code session open in a trusted folder")
        limits = ("a waiter starts after each turn and waits up to the hook's timeout "
                  "(86,400 s), so a session idle for longer is not woken",
                  "only Claude Code wakes on the hook's exit code 2 (not Cursor or Copilot)")


    class ClaudeChannelMethod(WakeMethod):
        """``serve --channel`` pushes the notice into the session."""

        name = "claude-channel"
        summary = ("the MCP server started with --channel pushes a notice into the running "
                   "Claude Code session (channels, a research preview)")
        needs = ("mailslot install claude --channel --agent NAME (serve --channel; chooses "
                 "this method)", "Claude Code started with "
                 "--dangerously-load-development-channels server:mailslot",
                 "a claude.ai login or Console API key")
        limits = ("research preview, terminal only (the flag is a claude argument): not on "
                  "Bedrock, Google Agent Platform or Microsoft Foundry; Team and Enterprise "
                  "organisations must enable channels",
                  "events arrive only while the session is open and are not acknowledged")

        @classmethod
        def from_config(cls, agent: str, cfg: Mapping[str, Any]) -> ClaudeChannelMethod:
            return cls()

        def preview(self, job: Job) -> list[str]:
            return ["nothing started: a running serve --channel pushes the notice; the watcher "
                    "checks that one is running"]

        def wake(self, job: Job) -> Outcome:
            from ..mail.presence import now_of, summarize

            presence = summarize(job.store.presence(), now_of(job.store)).get(job.agent)
            if presence is not None and any(s.channel for s in presence.sessions):
                return OK
            return Outcome(False, "no mailslot serve --channel is running for this agent "
                                  "(start Claude Code with its development-channels flag)")

    return [ClaudeMethod, ClaudeRewakeMethod, ClaudeChannelMethod]


HOST = Claude()
