"""Copilot CLI's wake method: a turn resumed (``copilot --resume``), with only the tools
the owner allows.
"""

from __future__ import annotations

from ...core.errors import StoreError
from ...wake.methods import Field, Job, ResumeMethod, where
from . import HOST

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


class CopilotMethod(ResumeMethod):
    name = "copilot"
    host = "copilot"
    program = "copilot"
    summary = "resumes a Copilot CLI session: copilot --resume=ID --prompt=NOTICE"
    needs = ("`copilot` on the watcher's PATH, logged in",
             "the session's id (`session_id`)", "`cwd`: the folder the session ran in")
    limits = (
        "runs a separate non-interactive turn in that session, not inside an open terminal",
        "Copilot keeps no approvals between runs: the turn may use only the tools in "
        "`allow_tools` (each passed as --allow-tool); never --allow-all-tools",
    )
    fields = (*ResumeMethod.fields,
              Field("allow_tools", 'tools the woken turn may use, e.g. ["mailslot"] '
                    "(copied from launch.copilot.allow_tools by `mailslot start`)",
                    required=False, kind="argv"))

    def __init__(self, agent: str, session_id: str, executable: str, cwd: str | None,
                 own_server: bool = False, allow_tools: tuple[str, ...] = ()) -> None:
        super().__init__(agent, session_id, executable, cwd, own_server)
        self.allow_tools = allow_tools

    @classmethod
    def from_config(cls, agent: str, cfg: Mapping[str, Any]) -> CopilotMethod:
        base = super().from_config(agent, cfg)
        tools = cfg.get("allow_tools", [])
        if not isinstance(tools, list) or not all(
                isinstance(t, str) and HOST.valid_tool(t) for t in tools):
            raise StoreError(f"{where(agent, 'allow_tools')} must be a list of "
                             'Copilot tool patterns such as "mailslot"')
        assert isinstance(base, ResumeMethod)
        return cls(agent, base.session_id, base.executable, base.cwd, base.own_server,
                   tuple(tools))

    def resume(self, job: Job, session: str) -> list[str]:
        # both glued to their flag: a notice starting with "-" is still the prompt
        return [self.executable, f"--resume={session}",
                *(f"--allow-tool={t}" for t in self.allow_tools), f"--prompt={job.notice}"]


METHODS = (CopilotMethod,)
