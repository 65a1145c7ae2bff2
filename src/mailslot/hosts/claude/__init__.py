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

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
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
than the wake takes to hear a hold or refusal (:data:`RECEIPT_SECONDS`), so the two never
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

    def wake_methods(self) -> Sequence[type]:
        return _wake_methods()


def _wake_methods() -> list[type]:
    """Built on first use, so that a hook, which needs only the facts above, never
    loads the wake machinery."""
    from ...core.names import session_key
    from ...core.values import replace
    from ...wake.line_socket import DoorError, UnknownShape
    from ...wake.methods import (
        OK,
        Check,
        Job,
        Outcome,
        ResumeMethod,
        Setup,
        WaiterMethod,
        WakeMethod,
        waiter_now,
    )

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
            from ...mail.presence import now_of, summarize

            presence = summarize(job.store.presence(), now_of(job.store)).get(job.agent)
            if presence is not None and any(s.channel for s in presence.sessions):
                return OK
            return Outcome(False, "no mailslot serve --channel is running for this agent "
                                  "(start Claude Code with its development-channels flag)")

    class ClaudePeerMethod(WakeMethod):
        """The watcher hands the notice to the open session through Claude Code's own
        cross-session door (:class:`Door`); the waiter is the fallback."""

        name = "claude-peer"
        summary = ("hands the notice to the open Claude Code session through Claude Code's "
                   "own cross-session messaging door (a Unix socket), within a second")
        needs = (f"Claude Code {PEER_SINCE} or later (cross-session messaging on)",
                 "mailslot install claude --hooks --wake --agent NAME (records the session, "
                 "registers the waiter as the fallback, chooses this method)",
                 "a Claude Code session of the agent open on this machine, as this user")
        limits = ("undocumented by Claude Code and checked on every wake: a changed "
                  "protocol fails loudly and the waiter wakes the session instead",
                  "the session's own settings decide: a held notice waits for the person's "
                  "approval (the sender is told); a refused one falls back to the waiter",
                  "the notice is a prompt from 'another Claude session' to the model; it "
                  "never approves anything and carries no subject or body")

        @classmethod
        def from_config(cls, agent: str, cfg: Mapping[str, Any]) -> ClaudePeerMethod:
            return cls()

        @classmethod
        def check(cls, setup: Setup) -> Check:
            """The waiter is the fallback, so this passes wherever it would; it says
            whether the agent's latest session has a door now."""
            if setup.latest is None:
                return Check(True, "no session recorded yet: the door of the agent's latest "
                                   "session is looked up at each wake")
            try:
                door = find_door(setup.latest, setup.env)
            except DoorError as exc:
                return Check(True, f"session {setup.latest} has no door now ({exc}); the "
                                   "waiter wakes it")
            return Check(True, f"session {setup.latest} has Claude Code's door (pid "
                               f"{door.pid}, {door.version})")

        def preview(self, job: Job) -> list[str]:
            return ["writes the notice to the cross-session socket of the agent's latest "
                    "Claude Code session (docs/claude-peers.md); the waiter is the fallback"]

        def route(self, job: Job) -> str:
            """The door when the agent's latest session has one now, else the waiter,
            and why (what :meth:`wake` would find; nothing is sent)."""
            session = job.store.latest_session(job.agent, HOST.name)
            if session is None:
                return (f"waiter: no Claude Code session of this agent is recorded yet; "
                        f"{waiter_now(job)}")
            try:
                door = find_door(session, os.environ)
            except UnknownShape as exc:
                return (f"waiter: Claude Code's door refused loudly ({exc}); "
                        f"{waiter_now(job)} after {PEER_GRACE:g} s")
            except DoorError as exc:
                return f"waiter: session {session} has no door now ({exc}); {waiter_now(job)}"
            state = "idle" if door.idle else "busy"
            return (f"door: Claude Code's own cross-session socket of session {session} "
                    f"(pid {door.pid}, Claude Code {door.version}, {state}); the waiter is "
                    "the fallback if the session refuses it")

        def wake(self, job: Job) -> Outcome:
            session = job.store.latest_session(job.agent, HOST.name)
            if session is None:
                return self._fallback(job, "no Claude Code session of this agent is recorded")
            try:
                door = find_door(session, os.environ)
                answer = door.knock(self._notice(job), job.timeout,
                                    later=lambda status: _decided(job, door, status))
            except UnknownShape as exc:  # loud: the waiter still wakes it after the grace
                return Outcome(False, f"Claude Code's door: {exc}", retry=False)
            except DoorError as exc:
                return self._fallback(job, f"Claude Code's door: {exc}")
            where = f"session {session} (pid {door.pid}, Claude Code {door.version})"
            if answer is None:
                self._announce(job, session)
                return Outcome(True, f"claude-peer: handed to {where}; it took it (no hold "
                                     "or refusal came)")
            if answer == "held":
                self._announce(job, session)  # the person decides; no waiter goes round it
                return Outcome(True, f"claude-peer: held in {where} for the person's approval",
                               tell=_held_body(job.agent, door))
            if answer == "refused":
                fallback = self._fallback(job, f"{where} refuses cross-session messages")
                return replace(fallback, tell=_refused_body(job.agent, fallback))
            if answer == "dropped":
                return Outcome(False, f"{where} dropped the notice at its inbox (rate "
                                      "limit, duplicate or full queue)")
            # a status of a later moment (denied, expired, delivered) cannot answer a
            # notice just sent: the protocol is not the one documented
            return Outcome(False, f"{where} answered {answer!r}, which claude-peer does not "
                                  "expect (docs/claude-peers.md)", retry=False)

        @staticmethod
        def _fallback(job: Job, why: str) -> Outcome:
            from ...mail.presence import pid_alive

            if any(pid_alive(p) for p in job.store.waiter_pids(job.agent)):
                return Outcome(True, f"{why}; the waiter wakes the session (claude-rewake)")
            return Outcome(False, f"{why}, and no waiter of this agent runs (install claude "
                                  "--hooks --wake, and keep a session open)")

        @staticmethod
        def _notice(job: Job) -> str:
            from ...mail.invocation import invocation
            from ...wake.notice import wake_notice

            tools = HOST.tool_names
            notice = wake_notice(job.agent, job.messages,
                                 invocation(job.agent, str(job.store.location)),
                                 tools.format("read_messages"))
            bridged = HOST.bridged(str(job.store.location), os.environ)
            return f"{notice} {HOST.answer_note(tools, bridged)}"

        @staticmethod
        def _announce(job: Job, session: str) -> None:
            """The session was told: its waiter need not tell it again."""
            job.store.add_shown(job.agent, session_key(session), [m.id for m in job.messages])

    return [ClaudeMethod, ClaudeRewakeMethod, ClaudeChannelMethod, ClaudePeerMethod]


RECEIPT_SECONDS = 3.0
"""How long a notice handed to the door waits for a hold or refusal (an accepted one
gets no answer at all: docs/claude-peers.md, "Receipts"). A busy 2.1.332 TUI was seen
to take over a second to hold one."""
_STATUS = {"held": "held", "denied": "denied", "expired": "expired",
           "delivered": "delivered", "refused": "refused", "dropped": "dropped"}


class Door:
    """One live Claude Code session's cross-session socket, checked (:func:`find_door`)."""

    __slots__ = ("idle", "pid", "record", "session", "socket", "token", "version")

    def __init__(self, pid: int, session: str, version: str, socket: str,
                 token: str | None, record: str = "", idle: bool = False) -> None:
        self.pid = pid
        self.session = session
        self.version = version
        self.socket = socket
        self.token = token  # the key file's peerToken (the auth line), if it has one
        self.record = record  # its registry file
        self.idle = idle  # its record said idle when it was found

    def busy(self) -> bool:
        """Has the session, idle before, started a turn (its record says busy)? A turn
        starts only for a message it took, after it would have sent any hold."""
        from ...wake.line_socket import DoorError, own_file

        try:
            record = jsontext.loads(own_file(self.record, private=False))
            return bool(record.get("status") == "busy")
        except (DoorError, ValueError, AttributeError):
            return False

    def frames(self, text: str, answers_to: str, msg_id: str) -> list[dict[str, Any]]:
        """The lines a notice is sent as: the auth line (when there is a key), then one
        user message bound to this session (a socket of another session drops it)."""
        auth = [] if self.token is None else [{"type": "auth", "token": self.token}]
        return [*auth, {"type": "user", "message": {"role": "user", "content": text},
                        "priority": "next", "from": f"uds:{answers_to}", "msgV": 1,
                        "msg_id": msg_id, "session_id": self.session}]

    def knock(self, text: str, timeout: float,
              later: Callable[[str], None] | None = None) -> str | None:
        """Hand ``text`` to the session; what it answered within
        :data:`RECEIPT_SECONDS` (``held``, ``refused``, ``dropped``...; ``None``: no
        answer, which is how it takes a message). Raises ``DoorError``. A held notice's
        later answer (``delivered``, ``denied``, ``expired``, ``dropped``) is handed to
        ``later`` when it comes, by :func:`_follow`."""
        import uuid

        from ...wake.line_socket import Listener, send_lines

        msg_id = str(uuid.uuid4())
        # receipts go only to a socket in the session's own socket folder, served by the
        # process that sent the message (docs/claude-peers.md)
        ours = os.path.join(os.path.dirname(self.socket),
                            f"mailslot-{os.getpid()}-{msg_id[:8]}.sock")
        listener = Listener(ours)
        try:
            send_lines(self.socket, self.frames(text, ours, msg_id), min(timeout, 10.0))
            lines = listener.answers(RECEIPT_SECONDS, self.busy if self.idle else None)
            answer = _status(lines, msg_id) if lines else None
        except BaseException:
            listener.close()
            raise
        if answer == "held" and later is not None:
            _follow(listener, msg_id, later)
        else:
            listener.close()
        return answer


HELD_SECONDS = 24 * 3600.0
"""How long the process that handed over a held notice keeps listening for the person's
decision (a receipt comes to the socket of the process that sent the message, and only
while it listens there: docs/claude-peers.md, "Receipts")."""
MAX_FOLLOWED = 100
"""Held notices followed at once by one process (Claude Code holds at most 100 a
session); past that a held notice's later answer is not listened for."""
_DECISIONS = ("delivered", "denied", "expired", "refused", "dropped")
_followed: list[object] = []


def _follow(listener: Any, msg_id: str, later: Callable[[str], None]) -> None:
    """Listen on, in a thread of its own, for the decision about held notice
    ``msg_id``; hand it to ``later``, then close. Lost if this process ends first
    (the mail is in the inbox all the same; ``status`` keeps saying held)."""
    import atexit
    import threading
    import time

    from ...wake.line_socket import DoorError

    if len(_followed) >= MAX_FOLLOWED:
        listener.close()
        return
    _followed.append(listener)
    atexit.register(listener.close)  # no socket left behind by a process that stops

    def run() -> None:
        deadline = time.monotonic() + HELD_SECONDS
        try:
            while (left := deadline - time.monotonic()) > 0:
                lines = listener.answers(min(left, 60.0))
                try:
                    status = _status(lines, msg_id) if lines else None
                except DoorError:
                    continue  # not about this notice: not the decision
                if status in _DECISIONS:
                    later(status)
                    return
        except DoorError:
            return
        finally:
            _followed.remove(listener)
            listener.close()

    threading.Thread(target=run, name=f"claude-peer-held-{msg_id[:8]}", daemon=True).start()


_DECIDED = {
    "delivered": "the person let the held wake notice through: the session has it",
    "denied": "the person declined the held wake notice",
    "expired": "the held wake notice expired unanswered (timed out, pushed out of the "
               "session's hold, or the session ended)",
    "refused": "the session stopped accepting cross-session messages before the held "
               "wake notice was let through",
    "dropped": "the session dropped the held wake notice",
}


def _decided(job: Any, door: Door, status: str) -> None:
    """A held notice's later answer: the newest wake line of each message says it, and
    its sender is told (best effort, as every receipt: the mail is in the inbox)."""
    from ...core.errors import MailslotError
    from ...mail.posting import Notifier
    from ...wake.queue import log, tell_sender

    said = f"claude-peer: {_DECIDED[status]} (pid {door.pid})"
    for message in job.messages:
        try:
            if status == "delivered":
                log(job.store, "wake_ok", message.id, job.agent, method="claude-peer",
                    said=said, later=True)
            else:
                log(job.store, "wake_failed", message.id, job.agent, method="claude-peer",
                    reason=said, final=True, later=True)
            then = ("" if status == "delivered" else " The message itself is in the inbox; "
                    "it is read at the session's next prompt.")
            tell_sender(Notifier(job.store), message.id, f"Your message to {job.agent}",
                        f"{job.agent}'s Claude Code session: {_DECIDED[status]}.{then}\n")
        except MailslotError:
            continue


def _status(lines: Sequence[str], msg_id: str) -> str:
    """The status a receipt gives for ``msg_id``; raises ``DoorError`` for any other
    shape (the protocol changed: fail loudly, never guess)."""
    from ...wake.line_socket import UnknownShape

    for line in lines:
        try:
            data = jsontext.loads(line)
        except ValueError:
            raise UnknownShape(f"the session answered something that is not JSON: "
                               f"{line[:80]!r}") from None
        if not (isinstance(data, dict) and data.get("type") == "control"
                and data.get("action") == "peer_message_status"
                and data.get("orig_msg_id") == msg_id and data.get("status") in _STATUS):
            raise UnknownShape("the session answered in a shape claude-peer does not know "
                               f"(docs/claude-peers.md): {line[:120]!r}")
        status = str(data["status"])
        return "refused" if data.get("status_detail") == "refused" else status
    raise UnknownShape("the session answered nothing readable")


def sessions_folder(env: Mapping[str, str]) -> str:
    """Where Claude Code keeps its live sessions' records."""
    home = env.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
    return os.path.join(home, "sessions")


def find_door(session: str, env: Mapping[str, str]) -> Door:
    """The door of the live Claude Code session ``session`` (the id its hooks recorded).

    Only a record ``<pid>.json`` naming that same pid counts: a regular file of this
    user's, opened without following a link, that no one else may write; its process
    running with the start time it names, started before the record was written, and
    Claude Code by its command line; speaking :data:`PEER_PROTOCOL`, at least
    :data:`PEER_SINCE`; its socket ``cc-socks/<pid>.sock`` in a folder of this user's
    no one else may write to, a private socket that process listens on. Raises
    ``DoorError`` saying which check failed (the first record of the session's that
    failed, when none passed)."""
    from ...wake.line_socket import DoorError, UnknownShape, own_file_and_stat

    folder = sessions_folder(env)
    try:
        names = sorted(n for n in os.listdir(folder) if _pid_of_record(n) is not None)
    except OSError as exc:
        raise DoorError(f"{folder}: {exc.strerror}") from None
    refused: DoorError | None = None
    for name in names:
        path = os.path.join(folder, name)
        try:
            raw, info = own_file_and_stat(path, private=False)
            record = jsontext.loads(raw)
        except (DoorError, ValueError):
            continue  # another session's record, unreadable or not ours: not this one
        if not isinstance(record, dict) or record.get("sessionId") != session:
            continue
        try:
            return _door(session, folder, path, record, info.st_mtime)
        except UnknownShape:
            raise
        except DoorError as exc:
            refused = refused or exc
    if refused is not None:
        raise refused
    raise DoorError(f"no live record of session {session} in {folder}")


def _pid_of_record(name: str) -> int | None:
    """The pid a registry file's name gives (``<pid>.json``), if it is one's."""
    pid = name[:-5] if name.endswith(".json") else ""
    return int(pid) if pid.isdigit() and pid[0] != "0" else None


def _door(session: str, folder: str, path: str, found: Mapping[str, Any],
          written: float) -> Door:
    """The door one record of ``session`` names, every check passed."""
    from ...core.processes import started_after
    from ...wake.choice import version_numbers
    from ...wake.line_socket import DoorError, UnknownShape

    pid, version = found.get("pid"), str(found.get("version") or "")
    if not isinstance(pid, int) or pid != _pid_of_record(os.path.basename(path)):
        raise DoorError(f"{path} names pid {pid!r}, not the pid of its own name")
    if not _running_since(pid, found.get("procStart")):
        raise DoorError(f"session {session}'s process {pid} is not running (a stale record)")
    if started_after(pid, written):
        raise DoorError(f"process {pid} started after {path} was written: it is not the "
                        "session that wrote it")
    if _is_claude(pid, version) is False:
        raise DoorError(f"process {pid} is not Claude Code (its command line names "
                        "another program)")
    if found.get("peerProtocol") != PEER_PROTOCOL:
        raise UnknownShape(f"session {session} speaks peerProtocol "
                           f"{found.get('peerProtocol')!r}, not {PEER_PROTOCOL}: Claude Code "
                           f"{version or '?'} changed its protocol (docs/claude-peers.md)")
    if version_numbers(version) < version_numbers(PEER_SINCE):
        raise DoorError(f"Claude Code {version or '?'} is older than {PEER_SINCE}")
    sock = found.get("messagingSocketPath")
    if not isinstance(sock, str) or not sock:
        raise DoorError(f"session {session} has no messaging socket (cross-session "
                        "messaging is off there)")
    _own_session_socket(pid, sock)
    return Door(pid, session, version, sock, _token(folder, pid, sock), path,
                found.get("status") == "idle")


_INTERPRETERS = frozenset({"node", "nodejs", "bun", "deno"})
_PLAIN_VERSION = r"\A\d+\.\d+\.\d+\Z"


def _is_claude(pid: int, version: str) -> bool | None:
    """Is process ``pid`` Claude Code, by its command line? Its program (or the script
    a JavaScript runtime runs) is named ``claude``, or is the plain version number the
    native installer names its binary by, or lies in the ``@anthropic-ai/claude-code``
    package. ``None``: ``/proc`` cannot tell (the record's other checks stand alone)."""
    import re

    from ...core.processes import command_line

    argv = command_line(pid)
    if argv is None:
        return None
    first = argv[0].split(" ")[0]
    programs = argv[:2] if os.path.basename(first) in _INTERPRETERS else argv[:1]
    names = {"claude", "claude.exe"}
    if re.match(_PLAIN_VERSION, version):
        names.add(version)
    for program in programs:
        if "/@anthropic-ai/claude-code/" in program:
            return True
        if {os.path.basename(program), os.path.basename(program.split(" ")[0])} & names:
            return True
    return False


def _own_session_socket(pid: int, sock: str) -> None:
    """``sock`` is where Claude Code keeps process ``pid``'s socket and that process
    listens there: ``.../cc-socks/<pid>.sock`` (or ``cc-socks-<uid>``), the folder this
    user's and writable by no one else, the socket this user's, 0600
    (docs/claude-peers.md)."""
    from ...core.processes import holds_socket
    from ...wake.line_socket import DoorError, own_folder, own_socket

    where, name = os.path.split(sock)
    if name != f"{pid}.sock" or os.path.basename(where) not in (
            "cc-socks", f"cc-socks-{os.geteuid()}"):
        raise DoorError(f"{sock} is not where Claude Code keeps process {pid}'s socket "
                        f"(a cc-socks folder, {pid}.sock)")
    own_folder(where)
    own_socket(sock)
    if holds_socket(pid, sock) is False:
        raise DoorError(f"process {pid} does not listen on {sock}")


def _running_since(pid: int, started: object) -> bool:
    """Is ``pid`` running, and (where ``/proc`` tells) since ``started``?"""
    from ...core.processes import start_ticks

    if os.path.isdir("/proc/self"):
        return start_ticks(pid) == str(started)
    from ...mail.presence import pid_alive  # no /proc here: the pid alone

    return pid_alive(pid)


def _token(folder: str, pid: int, sock: str) -> str | None:
    """The session's peer token from its 0600 key file, if there is one."""
    import hashlib

    from ...wake.line_socket import DoorError, own_file

    digest = hashlib.sha256(os.path.realpath(sock).encode("utf-8")).hexdigest()
    try:
        key = jsontext.loads(own_file(os.path.join(folder, f"{pid}.{digest}.key"),
                                      private=True, limit=4096))
    except (DoorError, ValueError):
        return None  # auth is optional on this platform (docs/claude-peers.md)
    token = key.get("peerToken") if isinstance(key, dict) else None
    return token if isinstance(token, str) and len(token) == 32 else None


def _held_body(agent: str, door: Door) -> str:
    return (f"mailslot handed {agent}'s Claude Code session (pid {door.pid}) the wake notice "
            "for your message through Claude Code's own cross-session door, and that "
            "session is holding it for its person's approval (its crossSessionInbound "
            f"setting, or permission-mode parity). The message itself is in {agent}'s "
            "inbox; it is read when the person lets the notice through, or at the "
            "session's next prompt.\n")


def _refused_body(agent: str, outcome: Any) -> str:
    then = ("the session's own waiter wakes it instead" if outcome.ok
            else f"no other wake reached it ({outcome.reason})")
    return (f"{agent}'s Claude Code session refuses cross-session messages (its "
            f"crossSessionInbound setting or a policy), so the wake notice for your message "
            f"was not delivered through Claude Code's door; {then}. The message itself is "
            f"in {agent}'s inbox.\n")


HOST = Claude()
