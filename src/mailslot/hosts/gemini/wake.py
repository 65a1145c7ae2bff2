"""Gemini CLI's wake method: a headless turn resumed (``gemini --resume``)."""

from __future__ import annotations

from ...wake.methods import Job, ResumeMethod


class GeminiMethod(ResumeMethod):
    name = "gemini"
    host = "gemini"
    program = "gemini"
    summary = "resumes a Gemini CLI session: gemini --resume ID -p NOTICE"
    needs = ("`gemini` on the watcher's PATH, logged in", "the session's id (`session_id`)",
             "`cwd`: the project folder, since Gemini keeps sessions per project")
    limits = ("runs a separate headless turn, with Gemini's default approval mode",)

    def resume(self, job: Job, session: str) -> list[str]:
        return [self.executable, "--resume", session, "-p", job.notice]


METHODS = (GeminiMethod,)
