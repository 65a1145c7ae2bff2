"""Antigravity's wake method: ``agentapi send-message`` into a conversation, with the
credentials its sidecar left in the mailbox (:mod:`.sidecar`).
"""

from __future__ import annotations

import os

from ...wake.methods import SESSION_ID, ArgvMethod, Field, Job, Outcome, child_env, text_field
from ...wake.process import Spawn, said_of
from . import HOST
from .agentapi import TOKEN_ENV, environment, error_of
from .sidecar import Unusable, credentials_path, project_source, read_credentials

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


class AgentApiMethod(ArgvMethod):
    name = "agentapi"
    summary = "sends the notice into an Antigravity conversation with `agentapi send-message`"
    needs = ("`agentapi` on the watcher's PATH, or Antigravity's own "
             "~/.gemini/antigravity/bin/agentapi (or `executable`)",
             "the credentials mailslot's sidecar writes into the mailbox "
             "(`install antigravity --sidecar`), or a `credentials_file`",
             "`conversation_id` (and `project_id` where the session uses one)")
    limits = (
        "undocumented by Antigravity: mailslot's contract is in docs/wake.md; check it "
        "against your install or point `executable` at a wrapper",
        "skipped (the mail waits in the inbox) while no sidecar's session runs",
    )
    fields = (
        Field("conversation_id", "the conversation (cascade) to send the notice to"),
        Field("credentials_file", "JSON file with address, token and the writer's pid "
              "(default: the sidecar's, in the mailbox)", required=False),
        Field("project_id", "the project the conversation belongs to (default: "
              "launch.antigravity.project_id, then the sidecar's)", required=False),
        Field("executable", "the agentapi program (default: `agentapi` on PATH, else "
              "~/.gemini/antigravity/bin/agentapi)", required=False),
    )
    secret_env = (TOKEN_ENV,)
    reads_stdout = True

    def __init__(self, agent: str, conversation: str, project: str | None,
                 credentials: str | None, executable: str) -> None:
        super().__init__(agent, executable)
        self.conversation = conversation
        self.project = project
        self.credentials = credentials

    @classmethod
    def from_config(cls, agent: str, cfg: Mapping[str, Any]) -> AgentApiMethod:
        what = "an id (letters, digits, '.', '_', ':', '-')"
        conversation = text_field(agent, cfg, "conversation_id", pattern=SESSION_ID,
                                  what=what)
        project = text_field(agent, cfg, "project_id", required=False, pattern=SESSION_ID,
                             what=what)
        credentials = text_field(agent, cfg, "credentials_file", required=False)
        executable = (text_field(agent, cfg, "executable", required=False)
                      or str(HOST.installed_program(os.environ)))
        return cls(agent, str(conversation), project, credentials, executable)

    def argv(self, job: Job) -> list[str]:
        return [self.executable, "send-message", self.conversation, job.notice]

    def _launch(self, job: Job) -> Mapping[str, Any]:
        launch = job.store.load_config().get("launch")
        entry = launch.get(HOST.name) if isinstance(launch, dict) else None
        own = {"credentials_file": self.credentials} if self.credentials else {}
        return {**(entry if isinstance(entry, dict) else {}), **own}

    def spawn(self, job: Job) -> Spawn | Outcome:
        launch = self._launch(job)
        path = credentials_path(launch, job.store.folder)
        found = path if isinstance(path, Unusable) else read_credentials(path)
        if isinstance(found, Unusable):
            if found.gone:
                return Outcome(False, f"{found.reason}; the message waits in the inbox",
                               retry=False, skip=True)
            return Outcome(False, found.reason)
        project, _ = project_source(self.project, launch, found, "agent")
        return Spawn(self.argv(job),
                     {**child_env(job), **environment(found.address, found.token, project)})

    def answered(self, stdout: bytes, env: Mapping[str, str]) -> str | None:
        error = error_of(stdout)
        if error is None:
            return None
        return "agentapi send-message answered" + said_of("error", error.encode(), env)

    def probe(self) -> list[str]:
        from pathlib import Path

        problems = super().probe()
        if self.credentials:
            found = read_credentials(Path(self.credentials).expanduser())
            problems += [found.reason] if isinstance(found, Unusable) else []
        return problems


METHODS = (AgentApiMethod,)
