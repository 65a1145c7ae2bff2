"""Taking due wakes from the queue and running them: claim, attempt, retry, give up.

One pass handles one agent while holding that agent's wake lock, so two watchers (or a
watcher and ``watch --once``) never wake the same agent at once, and each queued wake is
claimed by exactly one of them. A claim found while holding the lock was left by a
watcher that stopped mid-wake: it counts as an attempt and is tried again at once.

Before waking, each wake is checked again: mail already read (or gone) is not worth a
wake, and the recipient's config is read afresh, so turning wakes off (or the owner's
pause) takes effect for mail already queued. After the last failed attempt the sender
gets a notice from ``mailslot``; the message itself was delivered long before and stays
in the inbox.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..core.config import Config, this_machine
from ..core.errors import MailslotError, NotFound
from ..core.message import Message
from ..core.values import replace  # either kind of value class
from ..mail.governor import paused_in
from ..mail.invocation import invocation
from ..mail.posting import Notifier
from ..mail.presence import last_machines
from ..store import Store, WakeEntry
from .claims import Queue
from .environment import pass_env
from .methods import Job, Outcome, WakeMethod
from .methods_by_name import method_for
from .notice import gave_up_body, wake_notice
from .policy import Retry, WakeSettings, refusal, settings_for
from .queue import log, tell_sender

_SOON = 0.5  # seconds until a pass is tried again when it could not claim anything


@dataclass(frozen=True)
class Result:
    """How one queued wake ended this time, for the watcher to print."""

    agent: str
    message_id: str
    method: str
    attempt: int
    outcome: Outcome
    retry_in: float | None = None  # seconds until the next attempt; None: no more
    skipped: bool = False
    told: str | None = None  # the sender told that the wake failed for good


@dataclass
class Pass:
    """What one pass over an agent did, and when the agent next has a wake due."""

    locked: bool = False  # another watcher holds the agent: try again later
    next_due: float | None = None
    results: list[Result] = field(default_factory=list)


@dataclass(frozen=True)
class _Plan:
    settings: WakeSettings | None
    method: WakeMethod | None
    problem: str | None  # a config error: every wake fails for good, naming the field
    config: Config | None = None  # the config it was read from (the owner's pause too)

    @property
    def name(self) -> str:
        return self.settings.method if self.settings else "?"

    @property
    def retry(self) -> Retry:
        return self.settings.retry if self.settings else Retry()


RESTART_ATTEMPTS = 2
"""A failed recovery start is tried once more, then given up (the sender told): a start
that failed twice is a problem for a person, and each try opens a window."""
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    Recover = Callable[[Store, str, Mapping[str, Any]], Outcome | None]
    """Starting an agent again before its wake (``None``: nothing to start), given by
    the front end that runs the watcher (:func:`mailslot.launch.restart.recover`): the
    wake runner itself starts no session."""


class WakeRunner:
    """Runs the wake queue of one store."""

    kind = "wake"  # the events log's prefix (notifiers run as "notify")

    def __init__(self, store: Store, *, queue: Queue | None = None,
                 clock: Callable[[], float] | None = None,
                 stop: threading.Event | None = None,
                 report: Callable[[Result], None] | None = None,
                 recover: Recover | None = None) -> None:
        self.store = store
        self.wakes = queue or Queue(store)  # the queue it works (a notifier's: its own)
        self.queue = self.wakes.name  # as Store.queued_agents names it (wake, notify-N)
        self.recover = recover  # starting a gone agent again (launch.restart), if given
        self._clock = clock or store.clock  # not_before is by the store's clock
        self._stop = stop or threading.Event()  # set: end running wakes (the watcher stops)
        self.report = report  # told of each result as it happens, not when a pass ends

    def _done(self, done: Pass, results: Sequence[Result]) -> None:
        done.results.extend(results)
        if self.report is not None:
            for result in results:
                self.report(result)

    def agents(self, queued: list[str] | None = None) -> list[str]:
        """Agents that have wakes queued or claimed (``queued``, if the caller listed
        them already) and may be woken on this machine (``agents.NAME.host``, else
        where the agent was last seen)."""
        if queued is None:
            queued = self.wakes.agents()
        if not queued:
            return []
        try:
            config, here = Config(self.store.load_config()), this_machine()
            agents = config.agents()
            # where an agent was last seen decides only for one without a ``host``
            placed = all("host" in agents.get(agent, {}) for agent in queued)
            seen = {} if placed else last_machines(self.store.presence())
            return [agent for agent in queued if config.wakes_on(agent, here, seen.get(agent))]
        except MailslotError:
            return queued  # a broken config: each of their wakes fails naming the field

    def run_agent(self, agent: str) -> Pass:
        """Recover orphaned claims, then wake ``agent`` for everything due, until none is."""
        with self.wakes.lock(agent) as held:
            if not held:
                return Pass(locked=True)
            done = Pass()
            for orphan in self.wakes.orphans(agent):
                outcome = Outcome(False, "interrupted: the watcher waking it stopped mid-wake")
                self._done(done, [self._end(orphan, outcome, self._plan(agent), delay=0.0)])
            while True:
                pending = self.wakes.pending(agent)
                now = self._clock()
                due = sorted((e for e in pending if e.not_before <= now),
                             key=lambda e: e.message_id)
                if not due or self._stop.is_set():
                    done.next_due = min((e.not_before for e in pending), default=None)
                    return done
                results = self._attempt(agent, due)
                if not results:
                    done.next_due = now + _SOON
                    return done
                self._done(done, results)

    # One attempt --------------------------------------------------------------------
    def _plan(self, agent: str) -> _Plan:
        settings: WakeSettings | None = None
        config: Config | None = None
        try:
            config = Config(self.store.load_config())
            settings = settings_for(config, agent)
            method = method_for(agent, settings.method).from_config(agent, settings.fields)
        except MailslotError as exc:
            return _Plan(settings, None, str(exc), config)
        return _Plan(settings, method, None, config)

    def _attempt(self, agent: str, due: Sequence[WakeEntry]) -> list[Result]:
        plan = self._plan(agent)
        batch = due if plan.method is None or plan.method.batches else due[:1]
        results: list[Result] = []
        live: list[tuple[WakeEntry, Message]] = []
        for entry in batch:
            claimed = self.wakes.claim(entry)
            if claimed is None:
                continue  # taken by another process: it is theirs now
            if claimed.not_before > self._clock():  # re-queued for later since we listed it
                self.wakes.release(claimed, replace(claimed, claim=None))
                continue
            message, reason = self._still_wanted(claimed, plan)
            if message is None:
                log(self.store, f"{self.kind}_skipped", claimed.message_id, agent, reason=reason)
                self.wakes.release(claimed)
                results.append(Result(agent, claimed.message_id, plan.name, claimed.attempt,
                                      Outcome(False, reason, retry=False), skipped=True))
                continue
            live.append((claimed, message))
        if not live:
            return results
        if plan.method is None:
            outcome = Outcome(False, plan.problem or "no wake method", retry=False)
        else:
            outcome = self._wake(agent, plan, live)
        results.extend(self._end(entry, outcome, plan) for entry, _ in live)
        return results

    def _still_wanted(self, entry: WakeEntry, plan: _Plan) -> tuple[Message | None, str]:
        """The message, if the wake is still worth doing; else why not (the owner's
        pause by the config the plan was just read from)."""
        settings = plan.settings
        state = self.store.state_of(entry.agent, entry.message_id)
        if state is None:
            return None, "the message is no longer in the mailbox"
        if state not in self._wanted(settings):
            return None, f"the message is already {state}"
        try:
            message, _ = self.store.load(entry.agent, entry.message_id)
        except NotFound:
            return None, "the message is no longer in the mailbox"
        if settings is not None:
            refused = refusal(settings, message) or (
                None if plan.config is None else paused_in(plan.config, entry.agent))
            if refused is not None:
                return None, f"no longer allowed: {refused}"
        return message, ""

    def _wanted(self, settings: WakeSettings | None) -> tuple[str, ...]:
        """The states in which a queued entry is still worth running."""
        return ("unread",)

    def _wake(self, agent: str, plan: _Plan, live: Sequence[tuple[WakeEntry, Message]]
              ) -> Outcome:
        assert plan.settings is not None  # a method was built from them
        restarted = (None if self.recover is None
                     else self.recover(self.store, agent, plan.settings.fields))
        if restarted is not None:
            if not restarted.ok:
                return restarted
            plan = self._plan(agent)  # the method, pointed at the new session
        if plan.method is None:
            return Outcome(False, plan.problem or "no wake method", retry=False)
        try:
            passes = pass_env(plan.config.raw if plan.config is not None else {})
        except MailslotError as exc:
            return Outcome(False, str(exc), retry=False)
        messages = tuple(m for _, m in live)
        notice = wake_notice(agent, messages, invocation(agent, str(self.store.location)))
        job = Job(agent, messages, notice, self.store,
                  plan.retry.timeout_seconds, self._stop, passes)
        for entry, _ in live:
            log(self.store, f"{self.kind}_attempt", entry.message_id, agent, method=plan.name,
                attempt=entry.attempt)
        try:
            return plan.method.wake(job)
        except Exception as exc:  # a host adapter's bug must end as a failed attempt
            return Outcome(False, f"the {plan.name} method failed ({type(exc).__name__})")

    def _end(self, entry: WakeEntry, outcome: Outcome, plan: _Plan,
             delay: float | None = None) -> Result:
        """Log the outcome and end the claim: done, queued again, or given up (sender told)."""
        agent, name = entry.agent, plan.name
        if outcome.skip:
            log(self.store, f"{self.kind}_skipped", entry.message_id, agent, method=name,
                reason=outcome.reason)
            self.wakes.release(entry)
            return Result(agent, entry.message_id, name, entry.attempt, outcome, skipped=True)
        if outcome.ok:
            log(self.store, f"{self.kind}_ok", entry.message_id, agent, method=name,
                attempt=entry.attempt, **({"said": outcome.reason} if outcome.reason else {}))
            told = None
            if outcome.tell:  # before the release: a crash repeats the notice, never loses it
                notice = tell_sender(Notifier(self.store), entry.message_id,
                                     f"Your message to {agent}", outcome.tell)
                told = notice.to[0] if notice else None
            self.wakes.release(entry)
            return Result(agent, entry.message_id, name, entry.attempt, outcome, told=told)
        attempts = min(plan.retry.attempts, RESTART_ATTEMPTS) if outcome.restart \
            else plan.retry.attempts
        if outcome.retry and entry.attempt < attempts:
            wait = plan.retry.delay_after(entry.attempt) if delay is None else delay
            log(self.store, f"{self.kind}_failed", entry.message_id, agent, method=name,
                attempt=entry.attempt, reason=outcome.reason, final=False, retry_in=wait)
            again = replace(entry, attempt=entry.attempt + 1, not_before=self._clock() + wait,
                            claim=None)
            self.wakes.release(entry, again)
            return Result(agent, entry.message_id, name, entry.attempt, outcome, retry_in=wait)
        log(self.store, f"{self.kind}_failed", entry.message_id, agent, method=name,
            attempt=entry.attempt, reason=outcome.reason, final=True)
        told = self._give_up(entry, outcome)
        self.wakes.release(entry)  # after the notice: a crash repeats it, never loses it
        return Result(agent, entry.message_id, name, entry.attempt, outcome, told=told)

    def _give_up(self, entry: WakeEntry, outcome: Outcome) -> str | None:
        """Tell the sender the wake failed for good; whom we told (``None``: nobody)."""
        agent = entry.agent
        body = gave_up_body(agent, entry.message_id, entry.attempt, outcome.reason)
        notice = tell_sender(Notifier(self.store), entry.message_id, f"Could not wake {agent}",
                             body)
        return notice.to[0] if notice else None
