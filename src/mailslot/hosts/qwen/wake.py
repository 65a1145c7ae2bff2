"""Qwen Code's wake methods: ``qwen-peer`` (the notice through Qwen Code's own
cross-session door into the open session, :mod:`.door`) and ``qwen`` (a headless turn
resumed: ``qwen --resume``)."""

from __future__ import annotations

import os

from ...core.names import session_key
from ...wake.line_socket import DoorError, UnknownShape
from ...wake.methods import Check, Job, Outcome, ResumeMethod, Setup, WakeMethod
from . import HOST
from .cross_session import DOOR_SINCE, find_door

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


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


_ANSWERS = {
    "held": "held for the person (Qwen Code's /peers): the session's "
            "agents.crossSessionInbound is not \"accept\"",
    "refused": "refused: the session's agents.crossSessionInbound is \"refuse\"",
    "misaddressed": "misaddressed: that session's socket now belongs to another session",
    "dropped": "dropped at the session's inbox (rate limit, duplicate or full queue)",
}


class QwenPeerMethod(WakeMethod):
    """The watcher hands the notice to the open Qwen Code session through Qwen's own
    cross-session door (docs/qwen-peers.md)."""

    name = "qwen-peer"
    summary = ("hands the notice to the open Qwen Code session through Qwen Code's own "
               "cross-session inbox (a Unix socket), within a second")
    needs = (f"Qwen Code {DOOR_SINCE} or later, interactive, cross-session messaging on "
             "(agents.crossSessionMessaging, on by default)",
             'agents.crossSessionInbound set to "accept" in the session\'s settings '
             "(otherwise Qwen holds the notice for the person, or refuses it)",
             "mailslot install qwen --hooks --agent NAME (records the session)")
    limits = ("presents the session's own record token and claims no review mode: it is "
              "never the user speaking, and approves nothing",
              "a held notice waits for the person in /peers; a refused one is not retried "
              "(the mail is in the inbox, read at the session's next prompt)")

    @classmethod
    def from_config(cls, agent: str, cfg: Mapping[str, Any]) -> QwenPeerMethod:
        return cls()

    @classmethod
    def check(cls, setup: Setup) -> Check:
        """Passes where the agent's latest Qwen session has a door now."""
        if setup.latest is None:
            return Check(False, "no Qwen Code session of this agent is recorded yet "
                                "(install the hooks, then open a session)")
        try:
            door = find_door(setup.latest, setup.env)
        except DoorError as exc:
            return Check(False, f"session {setup.latest} has no door now: {exc}")
        return Check(True, f"session {setup.latest} has Qwen Code's door (pid {door.pid}, "
                           f"{door.version})")

    def preview(self, job: Job) -> list[str]:
        return ["writes the notice to the cross-session inbox of the agent's latest Qwen "
                "Code session (docs/qwen-peers.md)"]

    def route(self, job: Job) -> str:
        session = job.store.latest_session(job.agent, HOST.name)
        if session is None:
            return "nothing: no Qwen Code session of this agent is recorded yet"
        try:
            door = find_door(session, os.environ)
        except DoorError as exc:
            return f"nothing: session {session} has no door now ({exc})"
        return (f"door: Qwen Code's own cross-session inbox of session {session} (pid "
                f"{door.pid}, Qwen Code {door.version})")

    def wake(self, job: Job) -> Outcome:
        session = job.store.latest_session(job.agent, HOST.name)
        if session is None:
            return Outcome(False, "no Qwen Code session of this agent is recorded",
                           skip=True)
        try:
            door = find_door(session, os.environ)
            answer = door.knock(self._notice(job), job.timeout)
        except UnknownShape as exc:
            return Outcome(False, f"Qwen Code's door: {exc}", retry=False)
        except DoorError as exc:
            return Outcome(False, f"Qwen Code's door: {exc}")
        where = f"session {session} (pid {door.pid}, Qwen Code {door.version})"
        if answer == "delivered":
            job.store.add_shown(job.agent, session_key(session), [m.id for m in job.messages])
            return Outcome(True, f"qwen-peer: delivered to {where}")
        if answer == "held":
            return Outcome(True, f"qwen-peer: {where}: {_ANSWERS['held']}",
                           tell=(f"{job.agent}'s Qwen Code session holds the wake notice for "
                                 "the person to let through; the message is in its inbox."))
        if answer in _ANSWERS:
            return Outcome(False, f"qwen-peer: {where}: {_ANSWERS[answer]}",
                           retry=answer in ("misaddressed", "dropped"))
        return Outcome(False, f"qwen-peer: {where} gave no receipt" if answer is None
                       else f"qwen-peer: {where} answered {answer!r}, which qwen-peer does "
                            "not expect (docs/qwen-peers.md)", retry=answer is None)

    @staticmethod
    def _notice(job: Job) -> str:
        from ...mail.invocation import invocation
        from ...wake.notice import wake_notice

        return wake_notice(job.agent, job.messages,
                           invocation(job.agent, str(job.store.location)),
                           HOST.tool_names.format("read_messages"))


METHODS = (QwenPeerMethod, QwenMethod)
