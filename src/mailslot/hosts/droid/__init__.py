"""Factory's Droid (``@factory/cli``, program ``droid``): everything mailslot knows about it.

Droid reads MCP servers from ``~/.factory/mcp.json`` (user) and a project's
``.factory/mcp.json``, each under ``mcpServers`` in the shape ``droid mcp add`` writes
(``{"type": "stdio", "command", "args"}``, plus ``"disabled": false``). Its model sees
them as ``mailslot___<tool>`` (three underscores), deferred behind its ``ToolSearch``
tool.

Approval is the person's: Droid rates an MCP tool without a read-only hint as high
impact and asks before running it; ``droid exec`` (headless) never asks, it stops at the
first tool it may not run. "Always allow all mailslot tools" in the TUI records
``persistentPermissions.servers.mailslot`` in ``~/.factory/mcp.json`` with the server's
identity (a hash of its type, command and arguments): from then on both the TUI and
``droid exec`` run the tools, until the command or its arguments change. ``install``
writes no approval (its note says so). ``--skip-permissions-unsafe`` and ``--auto
medium|high`` skip those questions; mailslot never passes them.

Hooks: ``~/.factory/hooks.json`` and ``.factory/hooks.json``, the events at the top
level of the file (a ``{"hooks": ...}`` wrapper there is not read), each a list of
``{"matcher", "hooks": [...]}`` groups, timeouts in seconds: Claude Code's events,
input fields and output shapes. mailslot registers three: SessionStart (its source
``startup`` or ``resume``) and UserPromptSubmit, whose ``additionalContext`` reaches the
model, and Stop, whose ``decision: block`` continues the turn (``stop_hook_active`` is
true on the next Stop). UserPromptSubmit does not fire under ``droid exec``; PostToolUse
runs there but its ``additionalContext`` is dropped (the TUI shows it to the model), so
it is not registered: mail that lands during a turn is shown by the Stop hook.

Headless runs are ``droid exec -o json PROMPT`` (its last line holds the
``session_id``); ``droid exec -s ID PROMPT`` continues that session with its history:
the ``droid`` wake method. (It first asks Factory's service for the session and goes on
when that answers 404, as offline.)

Sources: docs.factory.ai/harness/hooks and docs.factory.ai/reference/hooks-reference
(hooks.json per scope, the settings.json fallback, matcher groups, timeout in seconds),
docs.factory.ai/droid-cli/settings (settings.json), ``droid exec --help`` of 0.225.2
(``-s``, ``--fork``, ``-o json``, the ``--auto`` levels, ``--skip-permissions-unsafe``);
the mcp.json files and entry as ``droid mcp add`` writes them, and the approval as the
TUI records it, from the real program.

Proven against Droid 0.225.2 (npm ``@factory/cli`` 0.225.1) offline
(tests/hosts/test_droid.py, docs/hosts.md): both scopes of ``install droid`` connect
(``droid mcp list``), the model's call of ``mailslot___send_message`` delivers mail as
the agent with the person's "always allow" approval and no bypass flag (and not without
it), the installed hooks show mail to the model at session start, at a prompt (TUI) and
at a turn's end (Stop, continuing the turn), and a ``droid`` wake resumes the latest
headless session whose notice and mail reach the model.
"""

from __future__ import annotations

from ...host_registry.host import (
    PROMPT,
    START,
    STOP,
    Hook,
    HookFile,
    Host,
    Rung,
)
from ..claude import CLAUDE_STYLE_EVENTS, OUTPUTS

APPROVE = (
    "Droid asks before running mailslot's tools: choose \"Always allow all "
    "'mailslot' tools\" once in the droid TUI (it records the approval in "
    "~/.factory/mcp.json, and `droid exec` then runs them too; install writes no "
    "approval). It holds while the server's command and arguments stay the same. "
    "`droid mcp list` checks the server."
)
"""What the person does once, in Droid itself (install writes no approval)."""


class Droid(Host):
    name = "droid"
    title = "Droid"
    program_env = ("FACTORY_*",)
    wake_ladder = (Rung("tmux"), Rung("droid"), Rung("command"))
    package = "@factory/cli"
    runtime = "factory-droid"

    mcp_path = {"project": ".factory/mcp.json", "user": "~/.factory/mcp.json"}
    mcp_fields = {"type": "stdio", "disabled": False}
    hook_file = HookFile(
        {"project": ".factory/hooks.json", "user": "~/.factory/hooks.json"},
        # No PostToolUse: `droid exec` runs it but drops its additionalContext (the TUI
        # shows it), so mail it showed would never reach a headless or woken turn; the
        # Stop hook shows mail that came during a turn before the turn ends.
        (Hook("SessionStart", "session-start"), Hook("UserPromptSubmit", "user-prompt-submit"),
         Hook("Stop", "stop")),
        10, container=None, notes=(
            "Droid reads the hooks key of a settings.json only while no hooks.json sits "
            "beside it: move any hooks you keep there into hooks.json.",
        ))
    install_notes = {
        "project": (APPROVE, "The droid TUI asks once to trust the folder before it "
                             "loads its .factory settings."),
        "user": (APPROVE,),
    }

    events = CLAUDE_STYLE_EVENTS
    outputs = OUTPUTS
    shows_at = frozenset({START, PROMPT, STOP})  # a post-tool-use hook answers {}
    tool_names = "mailslot___{}"  # deferred: its ToolSearch selects this

    bypass_flags = frozenset({"--skip-permissions-unsafe"})
    # --auto low only edits files in the project (Claude Code's acceptEdits); medium and
    # high run commands, and high every MCP tool, without asking
    bypass_values = {"--auto": frozenset({"medium", "high"})}


HOST = Droid()
