"""Claude Code's wake methods: a headless turn resumed (``claude``), the session's own
waiter (``claude-rewake``), a channel (``claude-channel``) and Claude Code's own
cross-session door (``claude-peer``, through :mod:`.door`).
"""

from __future__ import annotations

import os

from ...core.names import session_key
from ...core.values import replace  # either kind of value class
from ...wake.line_socket import DoorError, UnknownShape
from ...wake.methods import (
    OK,
    Check,
    Job,
    Outcome,
    ResumeMethod,
    Setup,
    WaiterMethod,
    WakeMethod,
    waiter_now,
)
from . import HOST, PEER_GRACE, PEER_SINCE
from .door import Door, find_door

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


class ClaudeMethod(ResumeMethod):
    name = "claude"
    host = "claude"
    program = "claude"
    summary = "resumes a Claude Code session: claude -p NOTICE --resume SESSION_ID"
    needs = ("`claude` on the watcher's PATH, logged in", "the session's id (`session_id`)")
    limits = (
        "runs a separate headless turn in that session, not inside an open terminal",
        "keeps Claude's permission prompts: in -p mode a tool that needs approval is "
        "refused",
    )

    def resume(self, job: Job, session: str) -> list[str]:
        return [self.executable, "-p", job.notice, "--resume", session]


class ClaudeRewakeMethod(WaiterMethod):
    """The session's own waiter hook wakes it (``mailslot hook claude wait``)."""

    name = "claude-rewake"
    host = "claude"
    summary = ("Claude Code's background waiter hook wakes the open session itself, within "
               "a second, without typing into the terminal")
    needs = ("mailslot install claude --hooks --wake --agent NAME (registers the waiter "
             "and chooses this method)", "a Claude Code session open in a trusted folder")
    limits = ("a waiter starts after each turn and waits up to the hook's timeout "
              "(86,400 s), so a session idle for longer is not woken",
              "only Claude Code wakes on the hook's exit code 2 (not Cursor or Copilot)")


class ClaudeChannelMethod(WakeMethod):
    """``serve --channel`` pushes the notice into the session."""

    name = "claude-channel"
    summary = ("the MCP server started with --channel pushes a notice into the running "
               "Claude Code session (channels, a research preview)")
    needs = ("mailslot install claude --channel --agent NAME (serve --channel; chooses "
             "this method)", "Claude Code started with "
             "--dangerously-load-development-channels server:mailslot",
             "a claude.ai login or Console API key")
    limits = ("research preview, terminal only (the flag is a claude argument): not on "
              "Bedrock, Google Agent Platform or Microsoft Foundry; Team and Enterprise "
              "organisations must enable channels",
              "events arrive only while the session is open and are not acknowledged")

    @classmethod
    def from_config(cls, agent: str, cfg: Mapping[str, Any]) -> ClaudeChannelMethod:
        return cls()

    def preview(self, job: Job) -> list[str]:
        return ["nothing started: a running serve --channel pushes the notice; the watcher "
                "checks that one is running"]

    def wake(self, job: Job) -> Outcome:
        from ...mail.presence import now_of, summarize

        presence = summarize(job.store.presence(), now_of(job.store)).get(job.agent)
        if presence is not None and any(s.channel for s in presence.sessions):
            return OK
        return Outcome(False, "no mailslot serve --channel is running for this agent "
                              "(start Claude Code with its development-channels flag)")


class ClaudePeerMethod(WakeMethod):
    """The watcher hands the notice to the open session through Claude Code's own
    cross-session door (:class:`Door`); the waiter is the fallback."""

    name = "claude-peer"
    summary = ("hands the notice to the open Claude Code session through Claude Code's "
               "own cross-session messaging door (a Unix socket), within a second")
    needs = (f"Claude Code {PEER_SINCE} or later (cross-session messaging on)",
             "mailslot install claude --hooks --wake --agent NAME (records the session, "
             "registers the waiter as the fallback, chooses this method)",
             "a Claude Code session of the agent open on this machine, as this user")
    limits = ("undocumented by Claude Code and checked on every wake: a changed "
              "protocol fails loudly and the waiter wakes the session instead",
              "the session's own settings decide: a held notice waits for the person's "
              "approval (the sender is told); a refused one falls back to the waiter",
              "the notice is a prompt from 'another Claude session' to the model; it "
              "never approves anything and carries no subject or body")

    @classmethod
    def from_config(cls, agent: str, cfg: Mapping[str, Any]) -> ClaudePeerMethod:
        return cls()

    @classmethod
    def check(cls, setup: Setup) -> Check:
        """The waiter is the fallback, so this passes wherever it would; it says
        whether the agent's latest session has a door now."""
        if setup.latest is None:
            return Check(True, "no session recorded yet: the door of the agent's latest "
                               "session is looked up at each wake")
        try:
            door = find_door(setup.latest, setup.env)
        except DoorError as exc:
            return Check(True, f"session {setup.latest} has no door now ({exc}); the "
                               "waiter wakes it")
        return Check(True, f"session {setup.latest} has Claude Code's door (pid "
                           f"{door.pid}, {door.version})")

    def preview(self, job: Job) -> list[str]:
        return ["writes the notice to the cross-session socket of the agent's latest "
                "Claude Code session (docs/claude-peers.md); the waiter is the fallback"]

    def route(self, job: Job) -> str:
        """The door when the agent's latest session has one now, else the waiter,
        and why (what :meth:`wake` would find; nothing is sent)."""
        session = job.store.latest_session(job.agent, HOST.name)
        if session is None:
            return (f"waiter: no Claude Code session of this agent is recorded yet; "
                    f"{waiter_now(job)}")
        try:
            door = find_door(session, os.environ)
        except UnknownShape as exc:
            return (f"waiter: Claude Code's door refused loudly ({exc}); "
                    f"{waiter_now(job)} after {PEER_GRACE:g} s")
        except DoorError as exc:
            return f"waiter: session {session} has no door now ({exc}); {waiter_now(job)}"
        state = "idle" if door.idle else "busy"
        return (f"door: Claude Code's own cross-session socket of session {session} "
                f"(pid {door.pid}, Claude Code {door.version}, {state}); the waiter is "
                "the fallback if the session refuses it")

    def wake(self, job: Job) -> Outcome:
        session = job.store.latest_session(job.agent, HOST.name)
        if session is None:
            return self._fallback(job, "no Claude Code session of this agent is recorded")
        try:
            door = find_door(session, os.environ)
            answer = door.knock(self._notice(job), job.timeout,
                                later=lambda status: _decided(job, door, status))
        except UnknownShape as exc:  # loud: the waiter still wakes it after the grace
            return Outcome(False, f"Claude Code's door: {exc}", retry=False)
        except DoorError as exc:
            return self._fallback(job, f"Claude Code's door: {exc}")
        where = f"session {session} (pid {door.pid}, Claude Code {door.version})"
        if answer is None:
            self._announce(job, session)
            return Outcome(True, f"claude-peer: handed to {where}; it took it (no hold "
                                 "or refusal came)")
        if answer == "held":
            self._announce(job, session)  # the person decides; no waiter goes round it
            return Outcome(True, f"claude-peer: held in {where} for the person's approval",
                           tell=_held_body(job.agent, door))
        if answer == "refused":
            fallback = self._fallback(job, f"{where} refuses cross-session messages")
            return replace(fallback, tell=_refused_body(job.agent, fallback))
        if answer == "dropped":
            return Outcome(False, f"{where} dropped the notice at its inbox (rate "
                                  "limit, duplicate or full queue)")
        # a status of a later moment (denied, expired, delivered) cannot answer a
        # notice just sent: the protocol is not the one documented
        return Outcome(False, f"{where} answered {answer!r}, which claude-peer does not "
                              "expect (docs/claude-peers.md)", retry=False)

    @staticmethod
    def _fallback(job: Job, why: str) -> Outcome:
        from ...mail.presence import pid_alive

        if any(pid_alive(p) for p in job.store.waiter_pids(job.agent)):
            return Outcome(True, f"{why}; the waiter wakes the session (claude-rewake)")
        return Outcome(False, f"{why}, and no waiter of this agent runs (install claude "
                              "--hooks --wake, and keep a session open)")

    @staticmethod
    def _notice(job: Job) -> str:
        from ...mail.invocation import invocation
        from ...wake.notice import wake_notice

        tools = HOST.tool_names
        notice = wake_notice(job.agent, job.messages,
                             invocation(job.agent, str(job.store.location)),
                             tools.format("read_messages"))
        bridged = HOST.bridged(str(job.store.location), os.environ)
        return f"{notice} {HOST.answer_note(tools, bridged)}"

    @staticmethod
    def _announce(job: Job, session: str) -> None:
        """The session was told: its waiter need not tell it again."""
        job.store.add_shown(job.agent, session_key(session), [m.id for m in job.messages])


_DECIDED = {
    "delivered": "the person let the held wake notice through: the session has it",
    "denied": "the person declined the held wake notice",
    "expired": "the held wake notice expired unanswered (timed out, pushed out of the "
               "session's hold, or the session ended)",
    "refused": "the session stopped accepting cross-session messages before the held "
               "wake notice was let through",
    "dropped": "the session dropped the held wake notice",
}


def _decided(job: Job, door: Door, status: str) -> None:
    """A held notice's later answer: the newest wake line of each message says it, and
    its sender is told (best effort, as every receipt: the mail is in the inbox)."""
    from ...core.errors import MailslotError
    from ...mail.posting import Notifier
    from ...wake.queue import log, tell_sender

    said = f"claude-peer: {_DECIDED[status]} (pid {door.pid})"
    for message in job.messages:
        try:
            if status == "delivered":
                log(job.store, "wake_ok", message.id, job.agent, method="claude-peer",
                    said=said, later=True)
            else:
                log(job.store, "wake_failed", message.id, job.agent, method="claude-peer",
                    reason=said, final=True, later=True)
            then = ("" if status == "delivered" else " The message itself is in the inbox; "
                    "it is read at the session's next prompt.")
            tell_sender(Notifier(job.store), message.id, f"Your message to {job.agent}",
                        f"{job.agent}'s Claude Code session: {_DECIDED[status]}.{then}\n")
        except MailslotError:
            continue


def _held_body(agent: str, door: Door) -> str:
    return (f"mailslot handed {agent}'s Claude Code session (pid {door.pid}) the wake notice "
            "for your message through Claude Code's own cross-session door, and that "
            "session is holding it for its person's approval (its crossSessionInbound "
            f"setting, or permission-mode parity). The message itself is in {agent}'s "
            "inbox; it is read when the person lets the notice through, or at the "
            "session's next prompt.\n")


def _refused_body(agent: str, outcome: Outcome) -> str:
    then = ("the session's own waiter wakes it instead" if outcome.ok
            else f"no other wake reached it ({outcome.reason})")
    return (f"{agent}'s Claude Code session refuses cross-session messages (its "
            f"crossSessionInbound setting or a policy), so the wake notice for your message "
            f"was not delivered through Claude Code's door; {then}. The message itself is "
            f"in {agent}'s inbox.\n")


METHODS = (ClaudeMethod, ClaudeRewakeMethod, ClaudeChannelMethod, ClaudePeerMethod)
