"""Waking Grok Build (xAI's ``grok`` CLI) by resuming its headless session.

Grok Build documents headless runs (``grok -p PROMPT``) and resuming a saved session
(``-r, --resume ID``; sessions in ``~/.grok/sessions``): docs.x.ai/build/cli. mailslot
runs ``grok --resume SESSION_ID -p NOTICE`` and never ``--always-approve`` (it is in
:data:`~mailslot.wake.methods.BYPASS_FLAGS`). Not the community ``grok`` of the npm
package ``@vibe-kit/grok-cli``, which has another interface.
"""

from __future__ import annotations

from .methods import Job, ResumeMethod


class GrokMethod(ResumeMethod):
    name = "grok"
    program = "grok"
    summary = "resumes a Grok Build session: grok --resume SESSION_ID -p NOTICE"
    needs = ("xAI's Grok Build `grok` on the watcher's PATH, logged in",
             "the session's id (`session_id`; `grok sessions list` shows them)")
    limits = (
        "runs a separate headless turn in that session, with Grok's default permissions: "
        "a tool that needs approval is cancelled, not approved",
    )

    def resume(self, job: Job, session: str) -> list[str]:
        """The argv that wakes ``session`` with the notice."""
        return [self.executable, "--resume", session, "-p", job.notice]
