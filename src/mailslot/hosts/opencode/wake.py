"""OpenCode's wake method: ``run --session`` (``--attach``: into a running server). Each
host of the family (Kilo) subclasses :class:`RunMethod` with its own name and words.
"""

from __future__ import annotations

import re

from ...core.errors import StoreError
from ...wake.methods import LATEST, Field, Job, ResumeMethod, text_field, where

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

_LOOPBACK = re.compile(r"http://(?:127\.0\.0\.1|localhost|\[::1\]):[0-9]{1,5}")
"""An open TUI's server: on this machine only."""

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
            from ... import host_registry as hosts

            raise StoreError(
                f'{where(agent, "session_id")} cannot be "latest" for {cls.name}: '
                f"{hosts.host(cls.host).title} has no hooks to record its latest "
                f"session; give the session's id (`{cls.program} session list`)")
        base = super().from_config(agent, cfg)
        attach = text_field(agent, cfg, "attach", required=False, pattern=_LOOPBACK,
                            what="a server on this machine (http://127.0.0.1:PORT, "
                                 "http://localhost:PORT or http://[::1]:PORT)")
        return cls(agent, base.session_id, base.executable, base.cwd, base.own_server,
                   attach)

    def resume(self, job: Job, session: str) -> list[str]:
        # the id matches SESSION_ID, the address the loopback pattern, and the notice
        # starts with "[mailslot]": none can be read as an option
        attach = ["--attach", self.attach] if self.attach else []
        return [self.executable, "run", *attach, "--session", session, job.notice]


METHODS = (RunMethod,)
