"""Cursor (its agent and CLI): everything mailslot knows about it.

Sources: Cursor's hooks and MCP documentation (cursor.com/docs). Its ``beforeSubmitPrompt``
hook cannot add context, so mail shows at session start and at stop (``followup_message``
continues the turn). Cursor also runs the hooks in Claude Code's settings files and then
accepts Claude Code's output shapes there.

No wake method: its CLI documents ``agent --resume CHAT_ID -p PROMPT``, but it is not on
npm, installs only as a prebuilt download from Cursor's server and runs only Cursor's
models through a Cursor account, so a wake could not be proven offline (docs/hosts.md).
"""

from __future__ import annotations

from ..host_registry.host import START, STOP, Hook, HookFile, Host, field
from .claude import HOOK_FILES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


class Cursor(Host):
    name = "cursor"
    title = "Cursor"
    program_env = ("CURSOR_API_KEY",)
    markers = ("CURSOR_VERSION",)
    runtime = "cursor"

    mcp_path = {"project": ".cursor/mcp.json", "user": "~/.cursor/mcp.json"}
    mcp_fields = {"type": "stdio"}
    hook_file = HookFile({"project": ".cursor/hooks.json", "user": "~/.cursor/hooks.json"},
                         (Hook("sessionStart", "session-start"), Hook("stop", "stop")), 10,
                         grouped=False, version=1)
    also_runs = ("claude", HOOK_FILES)

    events = {"session-start": START, "stop": STOP}
    outputs = {START: field("additional_context"), STOP: field("followup_message")}
    shows_at = frozenset({START, STOP})
    session_fields = ("conversation_id", "session_id")
    own_shapes = False

    def remote_entry(self, endpoint: str, secret_env: str) -> dict[str, Any]:
        # mcp.json interpolates ${env:NAME}
        return {"url": endpoint, "headers": {"Authorization": f"Bearer ${{env:{secret_env}}}"}}

    def hook_handler(self, ours: str, command: str) -> dict[str, Any]:
        return {"command": command, "timeout": self.hook_file.timeout}

    def runs_borrowed(self, payload: Mapping[str, object], env: Mapping[str, str]) -> bool:
        """Cursor says so with ``cursor_version`` in its input or ``CURSOR_VERSION`` in
        the environment."""
        return "cursor_version" in payload or bool(env.get("CURSOR_VERSION"))

    def continuing(self, payload: Mapping[str, object]) -> bool:
        """A followup is already running, or the person stopped the turn."""
        if payload.get("stop_hook_active"):
            return True
        loops = payload.get("loop_count")
        status = payload.get("status", "completed")
        return (isinstance(loops, int) and loops > 0) or status != "completed"


HOST = Cursor()
