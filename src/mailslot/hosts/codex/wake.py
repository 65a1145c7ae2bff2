"""Codex CLI's wake methods: a turn resumed (``codex exec resume``) and a notice queued
into a live session (``codex queue``).
"""

from __future__ import annotations

from ...wake.methods import Job, ResumeMethod


class CodexMethod(ResumeMethod):
    name = "codex"
    host = "codex"
    program = "codex"
    summary = "resumes a Codex session: codex exec resume SESSION_ID NOTICE"
    needs = ("`codex` on the watcher's PATH, logged in", "the session's id (`session_id`)")
    limits = (
        "runs a separate non-interactive turn, with Codex's default approval and sandbox",
        "hooks Codex has not been told to trust do not run in that turn",
    )

    def resume(self, job: Job, session: str) -> list[str]:
        return [self.executable, "exec", "resume", session, job.notice]


class CodexQueueMethod(ResumeMethod):
    name = "codex-queue"
    host = "codex"
    program = "codex"
    summary = ("queues the notice into a live Codex session: codex queue --thread ID "
               "--message NOTICE")
    needs = ("`codex` on the watcher's PATH",
             'the session\'s id (`session_id`, or "latest")')
    limits = (
        "the session must be open in a Codex TUI (or its app server) to act on it at once; "
        "otherwise the notice waits in the thread's queue until it is resumed",
    )

    def resume(self, job: Job, session: str) -> list[str]:
        return [self.executable, "queue", "--thread", session, "--message", job.notice]


METHODS = (CodexMethod, CodexQueueMethod)
