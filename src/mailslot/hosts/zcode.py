"""ZCode (Z.ai's coding agent: a desktop app over its ``zcode`` CLI core): everything
mailslot knows about it. Not installable here: mailslot's side is proven against a fake
(docs/hosts.md says which parts are proven and which are not).

Its contract, as documented (ZCode's hooks and MCP services pages, zcode.z.ai/en/docs,
as third-party integrations that were tested against ZCode Desktop quote them; the
sources are named in tests/fixtures/hosts/README.md): one JSON config,
``~/.zcode/cli/config.json`` for the user or ``.zcode/config.json`` in a project, holds
the MCP servers under ``mcp.servers`` and the hooks under ``hooks``::

    {"hooks": {"enabled": true,
               "events": {"SessionStart": [{"matcher": "", "hooks": [
                   {"type": "command", "command": PROGRAM, "args": [ARG, ...]}]}]}}}

The whole hooks subsystem is off unless ``hooks.enabled`` is true (``install`` sets it
where the file does not say; an explicit ``false`` is the person's and is kept). A hook
gets a JSON object on stdin and answers as Claude Code's do (``hookSpecificOutput``'s
``additionalContext``). Project hooks wait for the workspace's trust, and headless
``zcode -p`` runs dispatch no hooks from any config file: the hooks serve sessions of the
desktop app and its interactive CLI.

ZCode can be reached only at its hooks: it documents no way to resume a session or queue
a message into one from outside, and its app has no terminal pane to type into, so
``install zcode --wake`` says so and writes nothing.
"""

from __future__ import annotations

from ..host_registry.host import PROMPT, START, STOP, Hook, HookFile, Host
from .claude import OUTPUTS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..host_registry.host import Scope

CONFIG: dict[Scope, str] = {"project": ".zcode/config.json", "user": "~/.zcode/cli/config.json"}


class ZCode(Host):
    name = "zcode"
    title = "ZCode"

    default_scope = "user"  # project hooks wait for a workspace trust ZCode may not offer
    mcp_path = CONFIG
    mcp_container = "mcp.servers"
    hook_file = HookFile(
        CONFIG,
        (Hook("SessionStart", "session-start", ""),
         Hook("UserPromptSubmit", "user-prompt-submit", ""), Hook("Stop", "stop", "")),
        60_000,  # ZCode's own hooks.timeoutMs: its handlers carry none
        container="hooks.events", switches={"hooks.enabled": True}, notes=(
            "ZCode runs hooks only while hooks.enabled is true: install set it where the "
            "file said nothing; if it says false, ZCode runs none of them.",
            "ZCode runs project hooks only once the workspace is trusted, and no hooks at "
            "all in headless `zcode -p` runs: use them from the desktop app or the "
            "interactive CLI.",
        ))
    install_notes = {"project": ("Check that 'mailslot' shows under Settings → MCP Servers "
                                 "in ZCode.",),
                     "user": ("Check that 'mailslot' shows under Settings → MCP Servers "
                              "in ZCode.",)}

    events = {"session-start": START, "user-prompt-submit": PROMPT, "stop": STOP}
    outputs = {moment: OUTPUTS[moment] for moment in (START, PROMPT, STOP)}
    session_fields = ("session_id", "sessionId")

    wake_ladder = ()
    unreachable = ("it can be reached only at its hooks (session start, each prompt, stop): "
                   "it documents no way to resume a session or queue a message into one "
                   "from outside, and its app has no terminal pane to type into")

    def hook_handler(self, ours: str, command: str) -> dict[str, Any]:
        """``command`` as the program and its arguments apart, as ZCode's docs show it."""
        import shlex  # not at import: a hook loads this module and never needs it

        program, *args = shlex.split(command)
        return {"type": "command", "command": program, "args": args}


HOST = ZCode()
