"""How each host program is started (``mailslot start HOST``), beside how it is woken.

The rules (who may start what, with which model and permission mode) are in
:mod:`mailslot.launch.starting`; this module only knows each host's command line: its program
(the same default name its wake method uses), its permission modes and which of them
skip its prompts, and where each value goes. Every argv is built without a shell, the
prompt is one argument that can never be read as an option, and the finished argv is
checked with :func:`~mailslot.wake.methods.bypass_flag`: a permission-skipping flag
is only ever present when the owner listed that mode.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from .agentapi import AgentApiMethod
from .methods import ClaudeMethod, CodexMethod, CopilotMethod, GeminiMethod


@dataclass(frozen=True)
class Start:
    """A start the service has already checked: every value here may be passed."""

    prompt: str
    handoff: str
    name: str | None = None
    model: str | None = None
    effort: str | None = None
    permission_mode: str | None = None
    session_id: str | None = None
    project: str | None = None
    extra: tuple[str, ...] = ()
    """Per-session options mailslot adds (its own MCP server: :mod:`.session_mcp`)."""


class Host:
    """One host's command line for starting a session."""

    name: ClassVar[str]
    program: ClassVar[str]
    modes: ClassVar[tuple[str, ...]] = ()
    """Every permission mode the host knows (empty: it takes none)."""
    default_allowed: ClassVar[tuple[str, ...]] = ()
    """Allowed when the owner's config lists none."""
    bypass: ClassVar[frozenset[str]] = frozenset()
    """Modes that skip the host's permission prompts: allowed only when listed."""
    default_mode: ClassVar[str | None] = None
    handoffs: ClassVar[tuple[str, ...]] = ("background", "tmux")
    efforts: ClassVar[bool] = False
    session_ids: ClassVar[bool] = False
    """True: mailslot chooses the session id (so wakes can target that session)."""
    wake_method: ClassVar[str | None] = None
    """The wake method that resumes a background session by its id, if any."""

    def argv(self, executable: str, start: Start) -> list[str]:
        """The whole argv, ``argv[0]`` being ``executable``."""
        raise NotImplementedError

    mode_flag: ClassVar[str] = "--permission-mode"
    continues: ClassVar[tuple[str, ...]] = ()
    """How the host continues its latest session in a folder (empty: it cannot)."""

    def continue_argv(self, executable: str, mode: str | None) -> list[str]:
        """Continue the latest session in the current folder (recovery: ``restart``)."""
        return [executable, *self.continues, *_opt(self.mode_flag, mode)]


def _opt(flag: str, value: str | None) -> list[str]:
    """``--flag=value`` in one argument (a value starting with ``-`` stays a value)."""
    return [] if value is None else [f"{flag}={value}"]


class Claude(Host):
    name = "claude"
    program = ClaudeMethod.program
    modes = ("default", "acceptEdits", "plan", "auto", "dontAsk", "bypassPermissions")
    default_allowed = ("auto", "default", "acceptEdits", "plan")
    bypass = frozenset({"bypassPermissions"})
    default_mode = "default"
    efforts = True
    session_ids = True
    wake_method = ClaudeMethod.name
    continues = ("--continue",)
    handoffs = ("background", "tmux", "desktop")

    def argv(self, executable: str, start: Start) -> list[str]:
        argv = [executable] + (["-p"] if start.handoff == "background" else [])
        argv += _opt("--model", start.model) + _opt("--effort", start.effort)
        argv += _opt("--permission-mode", start.permission_mode)
        argv += _opt("--session-id", start.session_id) + _opt("--name", start.name)
        return [*argv, *start.extra, "--", start.prompt]


class Codex(Host):
    name = "codex"
    program = CodexMethod.program
    modes = ("read-only", "workspace-write", "danger-full-access")  # its sandbox modes
    default_allowed = ("read-only", "workspace-write")
    bypass = frozenset({"danger-full-access"})
    default_mode = "workspace-write"
    efforts = True
    continues = ("resume", "--last")
    mode_flag = "--sandbox"

    def argv(self, executable: str, start: Start) -> list[str]:
        argv = [executable] + (["exec"] if start.handoff == "background" else [])
        argv += _opt("--model", start.model) + _opt("--sandbox", start.permission_mode)
        if start.effort is not None:
            argv += ["-c", f"model_reasoning_effort={start.effort}"]
        return [*argv, *start.extra, "--", start.prompt]


class Gemini(Host):
    name = "gemini"
    program = GeminiMethod.program
    modes = ("default", "plan", "auto_edit", "yolo")  # its --approval-mode values
    default_allowed = ("default", "plan")
    bypass = frozenset({"auto_edit", "yolo"})
    default_mode = "default"
    session_ids = True
    wake_method = GeminiMethod.name
    continues = ("--resume", "latest")
    mode_flag = "--approval-mode"

    def argv(self, executable: str, start: Start) -> list[str]:
        argv = [executable, *_opt("--model", start.model)]
        argv += _opt("--approval-mode", start.permission_mode)
        argv += _opt("--session-id", start.session_id) + list(start.extra)
        if start.handoff == "background":  # headless needs --prompt; glued, one argument
            return [*argv, f"--prompt={start.prompt}"]
        return [*argv, "--", start.prompt]


class Copilot(Host):
    name = "copilot"
    program = "copilot"
    modes = ("default", "allow-all-tools")
    default_allowed = ("default",)
    bypass = frozenset({"allow-all-tools"})
    default_mode = "default"
    efforts = True
    session_ids = True
    wake_method = CopilotMethod.name

    def argv(self, executable: str, start: Start) -> list[str]:
        argv = [executable, *_opt("--model", start.model)]
        argv += _opt("--reasoning-effort", start.effort) + _opt("--name", start.name)
        argv += _opt("--session-id", start.session_id) + list(start.extra)
        if start.permission_mode == "allow-all-tools":
            argv.append("--allow-all-tools")
        # Copilot takes no positional prompt: --prompt/--interactive glued to it, one
        # argument, so a prompt starting with "-" is still the prompt.
        flag = "--prompt" if start.handoff == "background" else "--interactive"
        return [*argv, f"{flag}={start.prompt}"]


class Antigravity(Host):
    name = "antigravity"
    program = "agentapi"
    handoffs = ("background",)  # the conversation runs inside Antigravity
    wake_method = AgentApiMethod.name

    def argv(self, executable: str, start: Start) -> list[str]:
        return self.conversation_argv(executable, "<address from credentials_file>", start)

    @staticmethod
    def conversation_argv(executable: str, address: str, start: Start) -> list[str]:
        argv = [executable, "new-conversation", "--address", address]
        argv += _opt("--project", start.project) + _opt("--model", start.model)
        argv += _opt("--title", start.name)
        return [*argv, "--", start.prompt]


HOSTS: dict[str, Host] = {host.name: host for host in
                          (Claude(), Codex(), Gemini(), Copilot(), Antigravity())}
HOST_NAMES: Sequence[str] = tuple(HOSTS)
