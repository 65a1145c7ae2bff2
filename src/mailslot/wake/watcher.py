"""``mailslot watch``: wake opted-in agents as soon as a wake is queued for them.

The watcher follows the queue folder with file-system events (inotify on Linux,
FSEvents on macOS, through watchdog) and polls where events are unavailable. An event
only says "look again": each look lists the agents with queued wakes and hands each to a
worker thread, one pass per agent at a time (:class:`~mailslot.wake.runner.WakeRunner`
holds the agent's lock, so other watchers stay out). Retries are timed from the queue
itself, and a slow rescan catches anything an event missed.

This is the only module that imports watchdog, and only when ``watch`` runs.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TextIO

from ..core.dates import datetime
from ..core.errors import MailslotError
from ..store import Store
from .bank import refresh_banks
from .notify import notify_runners
from .runner import Pass, Result, WakeRunner

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .runner import Recover

DEFAULT_POLL_SECONDS = 1.0
RESCAN_SECONDS = 2.0  # with events: a safety look, for anything an event missed
LOCKED_RECHECK_SECONDS = 1.0
WORKERS = 8


def describe(result: Result) -> str:
    """One line per outcome: names, ids and our reasons, never a subject or body."""
    waking, woke, wake = (("notifying", "notified", "notify") if _is_notice(result)
                          else ("waking", "woke", "wake"))
    head = f"{result.agent} ({result.method}) for {result.message_id}"
    if result.skipped:
        return f"skipped {waking} {head}: {result.outcome.reason}"
    if result.outcome.ok:
        return f"{woke} {head} (attempt {result.attempt})"
    failed = f"could not {wake} {head} (attempt {result.attempt}): {result.outcome.reason}"
    if result.retry_in is not None:
        return f"{failed}; trying again in {result.retry_in:g} s"
    told = f"; told {result.told}" if result.told else ""
    return f"{failed}; gave up{told}"


def _is_notice(result: Result) -> bool:
    """A notifier's outcome, named ``notify[N]:KIND``."""
    return result.method.startswith("notify[")


def as_event(result: Result) -> dict[str, object]:
    """The same outcome as one JSON object (``watch --json``)."""
    if result.skipped:
        kind = "skipped"
    elif result.outcome.ok:
        kind = "woke"
    else:
        kind = "failed" if result.retry_in is not None else "gave_up"
    if _is_notice(result):
        kind = {"woke": "notified", "failed": "notify_failed", "gave_up": "notify_gave_up",
                "skipped": "notify_skipped"}[kind]
    return {"event": kind, "agent": result.agent, "method": result.method,
            "message_id": result.message_id, "attempt": result.attempt,
            "reason": None if result.outcome.ok else result.outcome.reason,
            "retry_in": result.retry_in, "told": result.told}


class Watcher:
    """Schedules passes over agents: at most one at a time per agent, on worker threads."""

    def __init__(self, store: Store, out: TextIO, workers: int = WORKERS,
                 *, as_json: bool = False, recover: Recover | None = None) -> None:
        self._json = as_json
        self._stop = threading.Event()
        self.runner = WakeRunner(store, stop=self._stop, recover=recover,
                                 report=lambda result: self.say(describe(result), as_event(result)))
        # One runner per notifier queue, scheduled like the wake queue's
        self.runners: list[WakeRunner] = [
            self.runner, *notify_runners(store, stop=self._stop, report=self.runner.report)]
        self._banks_due = 0.0
        self._out = out
        self._kick = threading.Event()
        self._lock = threading.Lock()
        # Keyed by (runner, agent): the runner's place in ``runners`` and the agent.
        self._busy: set[tuple[int, str]] = set()
        self._dirty: set[tuple[int, str]] = set()  # looked for while busy: look again
        self._due: dict[tuple[int, str], float] = {}
        self._locked: set[tuple[int, str]] = set()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="wake")
        self._futures: list[Future[None]] = []

    def say(self, line: str, event: dict[str, object] | None = None) -> None:
        """A line for people, or with ``--json`` one object a line (``event``, else a
        ``note`` holding the line)."""
        now = datetime.now()
        if self._json:
            data = {"time": now.astimezone().isoformat(timespec="seconds"),
                    **(event or {"event": "note", "text": line})}
            text = json.dumps(data, ensure_ascii=False)
        else:
            text = f"{now:%H:%M:%S} {line}"
        with self._lock:
            print(text, file=self._out, flush=True)

    def kick(self) -> None:
        """Something changed in the queue: look again."""
        self._kick.set()

    def stop(self) -> None:
        self._stop.set()
        self._kick.set()

    def scan(self) -> None:
        """Start a pass for every agent with queued wakes (or notices) that is not in one
        already."""
        agents = [(i, a) for i, runner in enumerate(self.runners) for a in runner.agents()]
        with self._lock:
            self._due = {a: t for a, t in self._due.items() if a in agents}
            starting = [a for a in agents if a not in self._busy]
            self._dirty.update(a for a in agents if a in self._busy)
            self._busy.update(starting)
            for agent in starting:
                self._due.pop(agent, None)
        self._futures = [f for f in self._futures if not f.done()]
        self._futures += [self._pool.submit(self._work, agent) for agent in starting]

    def _now(self) -> float:
        """The store's clock, which due times are on (a wake's ``not_before``); this
        machine's while the store cannot tell (the database is unreachable)."""
        try:
            return self.runner.store.clock()
        except MailslotError:
            return time.time()

    def refresh_banks(self) -> None:
        """Every few seconds: notice banks pruned of done mail, their states current."""
        if time.time() < self._banks_due:
            return
        self._banks_due = time.time() + RESCAN_SECONDS
        for problem in refresh_banks(self.runner.store):
            self.say(f"notice bank: {problem}")

    def _work(self, agent: tuple[int, str]) -> None:
        try:
            done = self.runners[agent[0]].run_agent(agent[1])
        except Exception as exc:  # one agent's trouble must not stop the watcher
            self.say(f"error while waking {agent[1]}: {type(exc).__name__}: {exc}")
            done = Pass(next_due=self._now() + RESCAN_SECONDS)
        with self._lock:
            self._busy.discard(agent)
            again = agent in self._dirty or bool(done.results)
            self._dirty.discard(agent)
            if done.locked:
                self._locked.add(agent)
            else:
                self._locked.discard(agent)
            due = self._now() + LOCKED_RECHECK_SECONDS if done.locked else done.next_due
            if due is not None:
                self._due[agent] = due
        if again:
            self.kick()

    def run(self, idle: float) -> None:
        """Until stopped: look, then sleep until an event, a due retry or ``idle`` seconds."""
        while not self._stop.is_set():
            self._kick.clear()
            try:
                self.scan()
                self.refresh_banks()
            except MailslotError as exc:  # e.g. the folder was moved: say, retry
                self.say(f"cannot read the wake queue: {exc}")
            now = self._now()
            with self._lock:
                soonest = min(self._due.values(), default=now + idle)
            self._kick.wait(max(0.0, min(idle, soonest - now)))

    def run_once(self) -> None:
        """One look: every wake due now, waiting for each to finish."""
        self.scan()
        wait(self._futures)
        self.refresh_banks()
        with self._lock:
            later, locked = dict(self._due), set(self._locked)
        for _, agent in sorted(locked):
            self.say(f"{agent}: another watcher is waking it; left to that watcher")
        for (i, agent), due in sorted(later.items()):
            if (i, agent) not in locked:
                what = "wake" if i == 0 else "notifier"
                self.say(f"{agent}: next {what} attempt due at "
                         f"{datetime.fromtimestamp(due):%H:%M:%S}"
                         " (run watch again, or keep a watcher running)")

    def close(self) -> None:
        """Stop: running wakes are ended (and retried later), then the workers finish."""
        self.stop()
        self._pool.shutdown(wait=True, cancel_futures=True)


def watch(store: Store, *, once: bool = False, poll: float | None = None,
          out: TextIO | None = None, as_json: bool = False,
          recover: Recover | None = None) -> int:
    """Run the watcher in the foreground (``once``: what is due now, then exit);
    ``recover`` starts a gone agent again before its wake (``mailslot watch`` gives
    :func:`mailslot.launch.restart.recover`)."""
    watcher = Watcher(store, out or sys.stdout, as_json=as_json, recover=recover)
    if once:
        try:
            watcher.run_once()
        finally:
            watcher.close()
        return 0
    # Wakes are only ever linked into the queue: the store kicks on each one.
    watching = store.watch(watcher.kick, wakes=True) if poll is None else None
    interval = poll if poll is not None else DEFAULT_POLL_SECONDS
    if watching is not None:
        watcher.say(f"watching {watching.how} in {store.location}; Ctrl-C stops")
    else:
        watcher.say(f"watching {store.location} for wakes (polling every "
                    f"{interval:g} s); Ctrl-C stops")
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda *_: watcher.stop())
    try:
        watcher.run(RESCAN_SECONDS if watching is not None else interval)
    finally:
        if watching is not None:
            watching.close()
        watcher.close()
    return 0
