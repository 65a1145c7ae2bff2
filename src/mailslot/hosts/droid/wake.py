"""Droid's wake method: a headless turn resumed (``droid exec -s``)."""

from __future__ import annotations

from ...wake.methods import Job, ResumeMethod


class DroidMethod(ResumeMethod):
    name = "droid"
    host = "droid"
    program = "droid"
    summary = "resumes a Droid session: droid exec -s SESSION_ID NOTICE"
    needs = ("Factory's `droid` on the watcher's PATH, with the session's model "
             "reachable (logged in, or its custom model in "
             "~/.factory/settings.json): a resumed session keeps its model",
             "the session's id (`session_id`: the `session_id` of `droid exec -o "
             'json`, or "latest" as its SessionStart hook recorded it)',
             "`cwd`: the project the session ran in (its MCP servers and hooks are "
             "read from there)")
    limits = (
        "runs a separate headless turn (`droid exec`) in that session, read-only "
        "but for the tools the person always allowed; never --auto or "
        "--skip-permissions-unsafe",
    )

    def resume(self, job: Job, session: str) -> list[str]:
        # the id matches SESSION_ID and the notice starts with "[mailslot]":
        # neither can be read as an option
        return [self.executable, "exec", "-s", session, job.notice]


METHODS = (DroidMethod,)
