"""Kilo Code CLI (``@kilocode/cli``, program ``kilo``): everything mailslot knows about it.

Kilo Code CLI 7.x is a fork of OpenCode. Its one JSON config holds the model providers,
the MCP servers (under ``mcp``, each a ``local`` entry whose ``command`` is one list, as
in OpenCode) and the tool permissions (``permission``). It reads, and merges, the user
config ``~/.config/kilo/kilo.json`` and a project's ``kilo.json``/``kilo.jsonc`` or
``.kilo/kilo.json``/``.kilo/kilo.jsonc``; a project's ``opencode.json`` is read too (as
OpenCode's). It has no command hooks (its plugins are JavaScript or TypeScript modules),
so its agents read mail through the MCP tools, which its model sees as
``mailslot_<tool>``.

Approval is the person's: a ``permission`` rule maps a tool name or glob to ``allow``,
``ask`` or ``deny``, and a tool no rule matches is ``ask``. Headless, ``kilo run`` never
asks: it rejects such a call (and exits 1). ``install`` therefore writes no permission;
its note says which rule the person adds (``"permission": {"mailslot_*": "allow"}``).
``--auto`` (and its hidden spellings ``--yolo`` and ``--dangerously-skip-permissions``)
approves every call no rule denies; mailslot never passes them. The environment variable
``KILO_PERMISSION`` overlays permissions too; mailslot never sets it.

Headless runs are ``kilo run [--format json] PROMPT``; each JSON event carries the
session's ``sessionID`` (``ses_…``, also listed by ``kilo session list``), and ``kilo
run --session ID PROMPT`` continues that session with the history carried: the ``kilo``
wake method, OpenCode's (:class:`..opencode.wake.RunMethod`), ``--attach URL`` included (a TUI
started with ``--port``; its server answers 401 without ``KILO_SERVER_PASSWORD``, which
the person sets for the TUI and the watcher alike). Without hooks, no session is ever
recorded as an agent's latest, so that method takes a session id only.

Sources: kilo.ai/docs/automate/mcp/using-in-kilo-code (MCP in the config files, project
and global), kilo.ai/docs/getting-started/settings/auto-approving-actions (permission
levels, the ``ask`` default), kilo.ai/docs/code-with-ai/platforms/cli-reference and
``kilo run --help`` of 7.7.7 (``--session``, ``--continue``, ``--format``, ``--auto``).
(The pre-1.0 Kilo CLI kept MCP servers in ``~/.kilocode/cli/global/settings/
mcp_settings.json``; 7.x does not read that file.)

Proven against Kilo Code CLI 7.7.7 offline (tests/hosts/test_kilo.py, docs/hosts.md):
both scopes of ``install kilo`` connect (``kilo mcp list``: connected), the model's
call of ``mailslot_send_message`` delivers mail as the agent with the person's
``mailslot_*: allow`` rule and no bypass flag, a rule left at ``ask`` makes ``kilo run``
reject the call, and a ``kilo`` wake resumes the headless session whose notice reaches
the model, or, with ``attach``, wakes the session open in Kilo's TUI.
"""

from __future__ import annotations

from ...host_registry.host import Host, Rung
from .. import PROVIDER_ENV

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Kilo(Host):
    name = "kilo"
    title = "Kilo Code CLI"
    program_env = ("KILO_*", *PROVIDER_ENV)
    wake_ladder = (Rung("tmux"), Rung("kilo"), Rung("command"))
    package = "@kilocode/cli"
    runtime = "kilo-cli"

    mcp_path = {"project": ".kilo/kilo.json", "user": "~/.config/kilo/kilo.json"}
    mcp_container = "mcp"
    mcp_fields = {"type": "local", "enabled": True}
    also_reads = ("opencode.json",)
    install_notes = {scope: (
        "Kilo Code CLI runs mailslot's tools only once your config allows them: add "
        '"permission": {"mailslot_*": "allow"} to a kilo.json (install writes no '
        "permission; a tool no rule allows is \"ask\", which `kilo run` rejects). Kilo "
        "has no command hooks (its plugins are JavaScript), so its agents read mail "
        "through the MCP tools. `kilo mcp list` checks the server.",
    ) for scope in ("project", "user")}

    bypass_flags = frozenset({"--auto", "--yolo", "--dangerously-skip-permissions"})

    def server_entry(self, command: str, args: list[str]) -> dict[str, Any]:
        return {**self.mcp_fields, "command": [command, *args]}


HOST = Kilo()
