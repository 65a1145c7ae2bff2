"""Cline CLI's wake method: a saved session prompted over ACP (``cline --acp``)."""

from __future__ import annotations

from ...core.errors import StoreError
from ...wake.methods import LATEST, OK, Field, Job, Outcome, ResumeMethod, bypass_flag, where

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


class ClineMethod(ResumeMethod):
    name = "cline"
    host = "cline"
    program = "cline"
    summary = ("prompts a saved Cline CLI session over ACP: cline --acp, then "
               "session/load SESSION_ID and session/prompt NOTICE")
    needs = ("`cline` on the watcher's PATH, able to start a session in ACP mode: "
             "signed in with a Cline account (`cline auth`), or for a provider of "
             "your own key CLINE_PROVIDER (and CLINE_MODEL) and CLINE_API_KEY in the "
             "watcher's environment",
             "the session's id (`session_id`: the `sessionId` of `cline history "
             "--json`)",
             "`cwd`: the folder the session ran in")
    limits = (
        "runs a separate turn of that session in its own `cline --acp` process, not "
        "inside an open terminal",
        "Cline asks mailslot before each tool in that turn and mailslot answers no: "
        "the agent sees the notice and can answer in text (never --auto-approve "
        "true, --yolo or --zen)",
        'no "latest": mailslot writes no Cline hooks, so no session of it is '
        "recorded as the agent's latest; name the session by its id",
    )
    fields = (*(f for f in ResumeMethod.fields if f.name not in ("cwd", "own_server")),
              Field("cwd", "the folder the session ran in (absolute)"))

    @classmethod
    def from_config(cls, agent: str, cfg: Mapping[str, Any]) -> ResumeMethod:
        import os

        if cfg.get("session_id") == LATEST:
            raise StoreError(f'{where(agent, "session_id")} cannot be "latest" for '
                             "cline: mailslot records no Cline session; give the "
                             "session's id (`cline history --json`)")
        method = super().from_config(agent, cfg)
        if method.cwd is None or not os.path.isabs(method.cwd):
            raise StoreError(f"{where(agent, 'cwd')} must be the absolute folder the "
                             "Cline session ran in")
        return method

    def resume(self, job: Job, session: str) -> list[str]:
        return [self.executable, "--acp"]

    def preview(self, job: Job) -> list[str]:
        return [*super().preview(job),
                f"then, over ACP: session/load {self.session_id}, session/prompt "
                "NOTICE; every permission request answered no"]

    def wake(self, job: Job) -> Outcome:
        from ...wake import acp
        from ...wake.process import Spawn

        spawn = self.spawn(job)
        if not isinstance(spawn, Spawn):
            return spawn
        flag = bypass_flag(spawn.argv, spawn.cwd)
        if flag is not None:
            return Outcome(False, f"refused: {flag} would skip the host's permission "
                           "prompts", retry=False)
        assert self.cwd is not None  # from_config requires it
        failure = acp.prompt(spawn, self.session_id, self.cwd, job.notice, job.timeout,
                             job.stop)
        return OK if failure is None else Outcome(False, failure)


METHODS = (ClineMethod,)
