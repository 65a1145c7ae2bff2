"""OpenCode (``opencode-ai``): everything mailslot knows about it.

Its MCP servers sit under ``mcp`` in ``opencode.json``, each a ``local`` entry whose
``command`` is one list. It has no command hooks (its plugins are JavaScript), so its
agents read mail through the MCP tools. Checked against the real program offline.

Waking (the ``opencode`` method): ``opencode run --session ID PROMPT`` continues a
session, its history carried (the ``sessionID`` of ``opencode run --format json``, or
``opencode session list``). Run alone it is a headless turn; with ``--attach URL`` the
turn runs in the OpenCode server at that address, so an open TUI started with
``opencode --port PORT`` (or a server started with ``opencode serve --port PORT``)
shows the woken turn as it happens. Either way the run answers the session's
permission requests itself: it rejects what no rule allows (``--auto``, which approves
them, and its hidden spellings ``--yolo`` and ``--dangerously-skip-permissions`` are
never passed). The server's password, if it has one, is read by ``opencode`` from
``OPENCODE_SERVER_PASSWORD`` in the watcher's environment, never from mailslot's config.

Kilo Code CLI, a fork, wakes the same way: its module builds on :func:`run_method`.
"""

from __future__ import annotations

from ..core.errors import StoreError
from ..host_registry.host import Host, Rung
from . import PROVIDER_ENV

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any


class OpenCode(Host):
    name = "opencode"
    title = "OpenCode"
    program_env = ("OPENCODE_*", *PROVIDER_ENV)
    wake_ladder = (Rung("tmux"), Rung("opencode"), Rung("command"))
    package = "opencode-ai"

    mcp_path = {"project": "opencode.json", "user": "~/.config/opencode/opencode.json"}
    mcp_container = "mcp"
    mcp_fields = {"type": "local", "enabled": True}
    install_notes = {scope: ("OpenCode has no command hooks (its plugins are JavaScript); its "
                             "agents read mail through the MCP tools. `opencode mcp list` "
                             "checks the server.",) for scope in ("project", "user")}

    bypass_flags = frozenset({"--auto", "--yolo", "--dangerously-skip-permissions"})

    def server_entry(self, command: str, args: list[str]) -> dict[str, Any]:
        return {**self.mcp_fields, "command": [command, *args]}

    def wake_methods(self) -> Sequence[type]:
        return [run_method()]


def run_method() -> type:
    """The ``run --session`` wake (``--attach``: into a running server), built on first
    use, so that a hook, which needs only the facts above, never loads the wake
    machinery. Each host of the family subclasses it with its own name and words."""
    import re

    from ..wake.methods import LATEST, Field, Job, ResumeMethod, text_field, where

    loopback = re.compile(r"http://(?:127\.0\.0\.1|localhost|\[::1\]):[0-9]{1,5}")

    class RunMethod(ResumeMethod):
        name = "opencode"
        host = "opencode"
        program = "opencode"
        summary = ("continues an OpenCode session: opencode run [--attach URL] --session "
                   "SESSION_ID NOTICE")
        needs = ("`opencode` on the watcher's PATH, with its provider set up",
                 "the session's id (`session_id`: `ses_…`, from `opencode session list` or "
                 "the `sessionID` of `opencode run --format json`)",
                 "`cwd`: the project the session ran in (its MCP config is read from there)",
                 "for an open TUI: `attach`, the address it serves on (start it as "
                 "`opencode --port PORT`)")
        limits = (
            "without `attach`, a separate headless turn in that session (an open TUI shows "
            "it only when the session is opened again)",
            "the woken run rejects any permission request no rule of the person's allows, "
            "even in an open TUI (never --auto)",
            'no "latest": OpenCode has no command hooks, so no session of it is ever '
            "recorded as the agent's latest; name the session by its id",
        )
        fields = (*ResumeMethod.fields,
                  Field("attach", "the address of the open session's server on this machine, "
                        "e.g. http://127.0.0.1:4096 (the TUI's --port); absent: a headless "
                        "turn", required=False))

        def __init__(self, agent: str, session_id: str, executable: str, cwd: str | None,
                     own_server: bool = False, attach: str | None = None) -> None:
            super().__init__(agent, session_id, executable, cwd, own_server)
            self.attach = attach

        @classmethod
        def from_config(cls, agent: str, cfg: Mapping[str, Any]) -> RunMethod:
            if cfg.get("session_id") == LATEST:
                from .. import host_registry as hosts

                raise StoreError(
                    f'{where(agent, "session_id")} cannot be "latest" for {cls.name}: '
                    f"{hosts.host(cls.host).title} has no hooks to record its latest "
                    f"session; give the session's id (`{cls.program} session list`)")
            base = super().from_config(agent, cfg)
            attach = text_field(agent, cfg, "attach", required=False, pattern=loopback,
                                what="a server on this machine (http://127.0.0.1:PORT, "
                                     "http://localhost:PORT or http://[::1]:PORT)")
            return cls(agent, base.session_id, base.executable, base.cwd, base.own_server,
                       attach)

        def resume(self, job: Job, session: str) -> list[str]:
            # the id matches SESSION_ID, the address the loopback pattern, and the notice
            # starts with "[mailslot]": none can be read as an option
            attach = ["--attach", self.attach] if self.attach else []
            return [self.executable, "run", *attach, "--session", session, job.notice]

    return RunMethod


HOST = OpenCode()
