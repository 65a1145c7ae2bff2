"""``mailslot watch``: wake opted-in agents as soon as a wake is queued for them.

The watcher follows the queue folder with file-system events (inotify on Linux,
FSEvents on macOS, through watchdog) and polls where events are unavailable. An event
only says "look again": each look lists the agents with queued wakes and hands each to a
worker thread, one pass per agent at a time (:class:`~mailslot.wake.runner.WakeRunner`
holds the agent's lock, so other watchers stay out). Retries are timed from the queue
itself, and a slow rescan catches anything an event missed.

While it runs, a watcher also keeps the search index caught up with new mail, on a
thread of its own (:func:`index_in_background`), so a search finds it indexed already.

This is the only module that imports watchdog, and only when ``watch`` runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, TextIO, cast

from ..core.config import Config, this_machine
from ..core.dates import datetime
from ..core.errors import MailslotError, Refused
from ..mail import watchers
from ..service.aging import EVERY
from ..service.aging import look as aging_look
from ..store import Store
from ..wake.bank import refresh_banks
from ..wake.notify import notify_runners
from ..wake.runner import Pass, Result, WakeRunner

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..wake.runner import Recover
    from .peer_watch import Carriers

DEFAULT_POLL_SECONDS = 1.0
RESCAN_SECONDS = 2.0  # with events: a safety look, for anything an event missed
LOCKED_RECHECK_SECONDS = 1.0
WORKERS = 8
TAKEOVER_SECONDS = 10.0  # for an on-demand watcher to stop when `watch` takes its place
INDEX_SECONDS = 2.0
"""How often the watcher looks for mail the search index has not taken in yet."""
INDEX_STEP_SECONDS = 0.5
"""The most one indexing step holds the index (a search meanwhile answers at once)."""


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
        self._ages_looked = 0.0  # when unread mail's age was last looked at (service.aging)
        self._ages_due: float | None = None  # when the next message comes of age
        self._hosts: Config | None = None  # the config may_wake_here reads hosts from
        self._hosts_due = 0.0
        self.out = out
        """Where its lines go (a bridge it starts writes there too)."""
        self._kick = threading.Event()
        self._lock = threading.Lock()
        # Keyed by (runner, agent): the runner's place in ``runners`` and the agent.
        self._busy: set[tuple[int, str]] = set()
        self._dirty: set[tuple[int, str]] = set()  # looked for while busy: look again
        self._due: dict[tuple[int, str], float] = {}
        self._locked: set[tuple[int, str]] = set()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="wake")
        self._futures: list[Future[None]] = []
        self.carrying: Callable[[], bool] = lambda: False
        """Do the peers' carriers have mail moving or waiting (the watcher stays)?"""

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
            print(text, file=self.out, flush=True)

    def kick(self) -> None:
        """Something changed in the queue: look again."""
        self._kick.set()

    def may_wake_here(self, agent: str) -> bool:
        """Is a queued wake of ``agent`` worth a look here? No only when its config names
        another machine as its ``host``: of 20 watchers sharing a database, the 19 on
        other machines then sleep through its notification instead of all scanning
        the queues. The config is read at most every :data:`RESCAN_SECONDS` (a change
        is seen by the next rescan anyway); any doubt is a yes."""
        now = time.monotonic()
        if now >= self._hosts_due:
            try:
                self._hosts = Config(self.runner.store.load_config())
            except MailslotError:
                self._hosts = None
            self._hosts_due = now + RESCAN_SECONDS
        hosts = self._hosts
        try:
            return hosts is None or hosts.wakes_on(agent, this_machine())
        except MailslotError:
            return True

    def stop(self) -> None:
        self._stop.set()
        self._kick.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def scan(self) -> None:
        """Start a pass for every agent with queued wakes (or notices) that is not in one
        already."""
        queued = self.runner.store.queued_agents()  # every queue in one look
        agents = [(i, a) for i, runner in enumerate(self.runners) if runner.queue in queued
                  for a in runner.agents(queued[runner.queue])]
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

    def look_at_ages(self) -> None:
        """Every minute or so: tell the owner of unread mail past its age limit."""
        due = self._ages_due is not None and self._now() >= self._ages_due
        if time.time() < self._ages_looked + EVERY and not due:
            return
        self._ages_looked = time.time()
        self._ages_due = aging_look(self.runner.store, self._now())

    def _work(self, agent: tuple[int, str]) -> None:
        try:
            done = self.runners[agent[0]].run_agent(agent[1])
        except Exception as exc:  # one agent's trouble must not stop the watcher
            self.say(f"error while waking {agent[1]}: {type(exc).__name__}: {exc}")
            done = Pass(next_due=self._now() + RESCAN_SECONDS)
        with self._lock:
            self._busy.discard(agent)
            again = agent in self._dirty  # its pass ran until none was due: no other look
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

    def run(self, idle: float, quiet: Quiet | None = None) -> None:
        """Until stopped: look, then sleep until an event, a due retry or ``idle`` seconds.

        With ``quiet``, after ``quiet.seconds`` with nothing queued, claimed or due for
        this machine, ``quiet.settle()`` is asked whether to go on (it lets go of the
        watcher's lock and looks once more: see :func:`watch`); no: the run ends.
        """
        last_busy = time.monotonic()
        while not self._stop.is_set():
            self._kick.clear()
            try:
                self.scan()
                self.refresh_banks()
                self.look_at_ages()
            except MailslotError as exc:  # e.g. the folder was moved: say, retry
                self.say(f"cannot read the wake queue: {exc}")
            now = self._now()
            with self._lock:
                soonest = min(self._due.values(), default=now + idle)
                active = bool(self._busy or self._due or self._ages_due is not None)
            active = active or (quiet is not None and self.carrying())
            if self._ages_due is not None:  # mail still to come of age: look then
                soonest = min(soonest, max(self._ages_due, now + 1.0))
            wait_for = max(0.0, min(idle, soonest - now))
            if quiet is not None:
                if self._mailbox_gone():
                    self.say("the mailbox is gone: stopping")
                    return
                if active:
                    last_busy = time.monotonic()
                left = quiet.seconds - (time.monotonic() - last_busy)
                if left <= 0:
                    if not quiet.settle():
                        return
                    last_busy = time.monotonic()
                    continue
                wait_for = min(wait_for, left)
            self._kick.wait(wait_for)

    def _mailbox_gone(self) -> bool:
        """Was the mailbox removed (a test's or a bench's temporary one)? A watcher
        nobody asked for stops then, rather than idling on a folder that no longer is."""
        try:
            return not self.runner.store.exists()
        except MailslotError:  # a database that does not answer now: not gone
            return False

    def run_once(self) -> None:
        """One look: every wake due now, waiting for each to finish."""
        self.scan()
        wait(self._futures)
        self.refresh_banks()
        self.look_at_ages()
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


@dataclass
class Quiet:
    """When a watcher started on demand ends: ``seconds`` with nothing to do, then
    ``settle()`` says whether to go on."""

    seconds: float
    settle: Callable[[], bool]


class _BoundedLog:
    """The on-demand watcher's standard output (its log file): kept under
    :data:`~mailslot.mail.watchers.LOG_LIMIT` after each line."""

    def __init__(self, base: str) -> None:
        self._base = base

    def write(self, text: str) -> int:
        return sys.stdout.write(text)

    def flush(self) -> None:
        sys.stdout.flush()
        watchers.rotate_log(self._base)


def watch(store: Store, *, once: bool = False, poll: float | None = None,
          out: TextIO | None = None, as_json: bool = False,
          recover: Recover | None = None, how: str = watchers.FOREGROUND) -> int:
    """Run the watcher (``once``: what is due now, then exit); ``recover`` starts a gone
    agent again before its wake (``mailslot watch`` gives
    :func:`mailslot.launch.restart.recover`).

    A running watcher holds this mailbox's watcher lock on this machine
    (:mod:`mailslot.mail.watchers`): one started ``on-demand`` exits at once if it cannot
    take it, and after ``watcher.idle_seconds`` with nothing to do; one in the
    foreground (or a service) asks an on-demand one to stop and takes its place, and
    beside another foreground one runs without the lock, sharing the queue. ``once``
    takes no lock (the agents' own wake locks keep it from waking what a running watcher
    wakes).
    """
    if once:
        watcher = Watcher(store, out or sys.stdout, as_json=as_json, recover=recover)
        try:
            watcher.run_once()
        finally:
            watcher.close()
        return 0
    boxed = _sandboxed(how)
    if boxed is not None:
        return boxed
    holder = _take(store, how)
    if holder is None:
        return 0  # started on demand beside a running one: that one does the work
    if how == watchers.ON_DEMAND:
        with contextlib.suppress(OSError):
            os.chdir(os.path.expanduser("~"))  # not the folder of whoever started it
        _reach(store, holder)
        out = cast(TextIO, _BoundedLog(holder.base))
    watcher = Watcher(store, out or sys.stdout, as_json=as_json, recover=recover)
    held = [holder]

    def settle() -> bool:
        """Let go of the lock, then look once more: a wake queued by a sender that
        found the lock still held is seen here (the sender queues, then checks)."""
        held[0].release()
        if not any(runner.agents() for runner in watcher.runners) and not watcher.carrying():
            return False
        again = watchers.hold(store, how)
        if again is None:
            return False  # another watcher started meanwhile: it has the queue
        held[0] = again
        return True

    quiet = None
    if how == watchers.ON_DEMAND:
        quiet = Quiet(watchers.idle_seconds(_config(store)), settle)
    try:
        return _run(store, watcher, poll, quiet)
    finally:
        held[0].release()


def _sandboxed(how: str) -> int | None:
    """A watcher in a sandbox (:mod:`mailslot.core.sandbox`) would run every wake in it:
    one started on demand there stops at once (exit status 0, one line in its log);
    one a person started is told so and goes on."""
    from ..core.sandbox import sandboxed

    why = sandboxed()
    if why is None:
        return None
    if how == watchers.ON_DEMAND:
        print(f"mailslot: note: not watching: this watcher runs in a sandbox ({why}); the "
              "next ordinary send, a hook or `mailslot watch` starts one outside it")
        return 0
    print(f"mailslot: note: this watcher runs in a sandbox ({why}): the programs it wakes "
          "run in it too", file=sys.stderr)
    return None


def _reach(store: Store, holder: watchers.Holder) -> None:
    """An on-demand watcher's first look at its store. Nobody reads its output, so why
    it cannot reach the store is kept beside the lock for the next sender to hear
    (:func:`mailslot.mail.watchers.failed`), then raised."""
    try:
        store.load_config()
    except MailslotError as exc:
        watchers.failed(holder.base, str(exc))
        holder.release()
        raise
    watchers.failed(holder.base, None)


def _config(store: Store) -> dict[str, Any]:
    try:
        return store.load_config()
    except MailslotError:
        return {}


def _take(store: Store, how: str) -> watchers.Holder | None:
    """The watcher lock, for a watcher started ``how``; ``None``: leave it to the one
    running. Raises :class:`Refused` where a person should be told."""
    holder = watchers.hold(store, how)
    if holder is not None or how == watchers.ON_DEMAND:
        return holder
    running = watchers.record(store) or {}
    pid = running.get("pid")
    found = f"another watcher runs here ({describe_running(running)})"
    if running.get("how") == watchers.ON_DEMAND and isinstance(pid, int):
        forged = watchers.impostor(running)
        if forged is None:
            return _take_over(store, how, pid)
        found = f"the watcher record names pid {pid}, but {forged}: no signal was sent"
    # Beside another watcher a person started (or one whose record cannot be believed):
    # both work the queue (each agent's wake lock keeps them from waking it twice); that
    # one holds the lock.
    print(f"mailslot: note: {found}; this one shares the queue with it", file=sys.stderr)
    return watchers.Holder(-1, watchers.base_path(store))


def _take_over(store: Store, how: str, pid: int) -> watchers.Holder:
    """Ask the on-demand watcher ``pid`` (checked: its start time and command line are
    its record's) to stop, and take the lock once it has."""
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + TAKEOVER_SECONDS
    while time.monotonic() < deadline:
        holder = watchers.hold(store, how)
        if holder is not None:
            return holder
    raise Refused(f"the on-demand watcher (pid {pid}) did not stop within "
                  f"{TAKEOVER_SECONDS:g} s; try again")


def describe_running(running: Mapping[str, Any]) -> str:
    """``on-demand, pid 4242 on box, since 2026-11-30T10:00:00+00:00``."""
    return (f"{running.get('how') or 'starting'}, pid {running.get('pid') or '?'} on "
            f"{running.get('host') or '?'}, since {running.get('started') or '?'}")


def index_in_background(store: Store, stop: threading.Event,
                        say: Callable[[str], None]) -> threading.Thread:
    """A thread that, every :data:`INDEX_SECONDS` until ``stop``, indexes new mail in
    steps of :data:`INDEX_STEP_SECONDS` until none is left (on a store that indexes at
    delivery each look returns at once). Indexing is safe beside searches in other
    processes: each step is a transaction of its own (docs/keep.md)."""
    def run() -> None:
        reported = ""
        while not stop.wait(INDEX_SECONDS):
            try:
                while store.catch_up_index(INDEX_STEP_SECONDS) and not stop.is_set():
                    pass
                reported = ""
            except MailslotError as exc:  # say it once; the next look tries again
                if str(exc) != reported:
                    say(f"cannot index new mail for search: {exc}")
                reported = str(exc)

    thread = threading.Thread(target=run, name="search-index", daemon=True)
    thread.start()
    return thread


def _carriers(store: Store, watcher: Watcher) -> Carriers:
    """The peers' carriers (:mod:`.peer_watch`): one thread that looks at config.json
    every few seconds, and one per peer this node reaches."""
    from .peer_watch import Carriers

    carriers = Carriers(store, watcher.say).start()
    watcher.carrying = carriers.busy
    return carriers


def _run(store: Store, watcher: Watcher, poll: float | None, quiet: Quiet | None) -> int:
    """The watcher until stopped (Ctrl-C, SIGTERM) or, on demand, quiet."""
    # Wakes are only ever linked into the queue: the store kicks on each one.
    watching = store.watch(watcher.kick, wakes=watcher.may_wake_here) if poll is None else None
    interval = poll if poll is not None else DEFAULT_POLL_SECONDS
    if watching is not None:
        watcher.say(f"watching {watching.how} in {store.location}; Ctrl-C stops")
    else:
        watcher.say(f"watching {store.location} for wakes (polling every "
                    f"{interval:g} s); Ctrl-C stops")
    if quiet is not None:
        watcher.say(f"started on demand (pid {os.getpid()}); ends after {quiet.seconds:g} s "
                    "with nothing to wake")
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda *_: watcher.stop())
    indexing = threading.Event()
    index_in_background(store, indexing, watcher.say)
    from .a2a_relay import start_relay
    from .bridge_server import start_bridges, stop_bridges

    bridges = start_bridges(store, _config(store), watcher.out)
    carriers = _carriers(store, watcher)
    bridges += start_relay(store, _config(store), watcher.out)  # a2a.remotes named
    try:
        watcher.run(RESCAN_SECONDS if watching is not None else interval, quiet)
        if quiet is not None and not watcher.stopping:
            watcher.say("nothing to wake: stopping (the next send starts a watcher again)")
    finally:
        indexing.set()
        carriers.close()
        stop_bridges(bridges)
        if watching is not None:
            watching.close()
        watcher.close()
    return 0
