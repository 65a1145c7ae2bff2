"""Qwen Code's wake method: a headless turn resumed (``qwen --resume``)."""

from __future__ import annotations

from ...wake.methods import Job, ResumeMethod


class QwenMethod(ResumeMethod):
    name = "qwen"
    host = "qwen"
    program = "qwen"
    summary = "resumes a Qwen Code session: qwen --resume SESSION_ID NOTICE"
    needs = ("`qwen` on the watcher's PATH, with its model provider set up",
             "the session's id (`session_id`: one `--session-id` chose, or "
             '"latest": the interactive session its SessionStart hook recorded)',
             "`cwd`: the project the session ran in (Qwen keeps sessions per project)")
    limits = ("runs a separate headless turn in that session, with the approval mode "
              "and allowed tools of the person's settings (never --yolo or "
              "--approval-mode yolo, auto-edit or auto)",)

    def resume(self, job: Job, session: str) -> list[str]:
        # the id matches SESSION_ID and the notice starts with "[mailslot]": neither
        # can be read as an option
        return [self.executable, "--resume", session, job.notice]


METHODS = (QwenMethod,)
