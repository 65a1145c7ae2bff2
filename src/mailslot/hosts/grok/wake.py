"""Grok Build's wake method: a headless turn resumed (``grok --resume``)."""

from __future__ import annotations

from ...wake.methods import Job, ResumeMethod


class GrokMethod(ResumeMethod):
    name = "grok"
    host = "grok"
    program = "grok"
    summary = "resumes a Grok Build session: grok --resume SESSION_ID -p NOTICE"
    needs = ("xAI's Grok Build `grok` on the watcher's PATH, logged in",
             "the session's id (`session_id`; `grok sessions list` shows them)")
    limits = (
        "runs a separate headless turn in that session, with Grok's default permissions: "
        "a tool that needs approval is cancelled, not approved",
    )

    def resume(self, job: Job, session: str) -> list[str]:
        return [self.executable, "--resume", session, "-p", job.notice]


METHODS = (GrokMethod,)
