"""The watcher's carriers: one thread per peer this node reaches, carrying mail both ways.

Each thread opens the link when mail waits for its peer, or every
``peer_poll_seconds`` to fetch what waits there (a peer that cannot reach this node,
a laptop behind a router, is served this way), keeps it live while mail moves (so a
message queued meanwhile leaves within a few hundredths of a second) and closes it after
:data:`LINGER_SECONDS` of quiet. A link that fails is tried again after a backoff that
doubles up to :data:`MOST_BACKOFF_SECONDS`; mail that waited longer than
``peer_bounce_hours`` goes back to its sender. Peers added or removed in config.json are
picked up within :data:`LOOK_SECONDS`.
"""

from __future__ import annotations

import threading
import time

from ..core.errors import MailslotError
from ..peers import peer_config as settings

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ..service.mailbox import Mailbox
    from ..store import Store

LINGER_SECONDS = 30.0
LOOK_SECONDS = 2.0
QUEUE_LOOK_SECONDS = 0.2
"""How often an idle carrier looks whether mail waits for its peer."""
FIRST_BACKOFF_SECONDS = 1.0
MOST_BACKOFF_SECONDS = 300.0
EXPIRE_SECONDS = 10.0


class Carriers:
    """The carriers of one watcher, started and stopped with it."""

    def __init__(self, store: Store, say: Callable[[str], None]) -> None:
        self.store, self.say = store, say
        self.stop = threading.Event()
        self.threads: dict[str, threading.Thread] = {}
        self.last_moved = 0.0
        """When a carrier last moved something (the watcher stays while they are busy)."""
        self._manager = threading.Thread(target=self._manage, name="peers", daemon=True)

    def start(self) -> Carriers:
        self._manager.start()
        return self

    def close(self) -> None:
        self.stop.set()
        for thread in [self._manager, *self.threads.values()]:
            if thread.is_alive():
                thread.join(timeout=10)

    def busy(self) -> bool:
        """Did a carrier move mail within the last linger, or does mail wait for a peer?"""
        if time.monotonic() - self.last_moved < LINGER_SECONDS:
            return True
        try:
            box = self._box()
            return any(self.waiting(box, node) for node in self.threads)
        except MailslotError:
            return False

    @staticmethod
    def waiting(box: Mailbox, node: str) -> bool:
        """Does anything wait here for ``node``? (one listing)"""
        return bool(box.peer_state.keys("outbox", (node,))[:1])

    def _box(self) -> Mailbox:
        from ..service.mailbox import Mailbox

        return Mailbox(self.store)

    def _manage(self) -> None:
        box = self._box()
        while not self.stop.is_set():
            try:
                wanted = settings.reachable(self.store.load_config())
                box._config = None  # read again: a setting may have changed
                box.expire_peer_mail(every=EXPIRE_SECONDS)  # a peer that connects here too
            except MailslotError as exc:
                self.say(f"peers: {exc}")
                wanted = {}
            for node in wanted:
                if node not in self.threads or not self.threads[node].is_alive():
                    self.threads[node] = threading.Thread(
                        target=self._carry, args=(node,), name=f"peer-{node}", daemon=True)
                    self.threads[node].start()
            self.stop.wait(LOOK_SECONDS)

    def _carry(self, node: str) -> None:
        """Carry for ``node`` until it is no peer any more or the watcher stops."""
        box = self._box()
        failures, due, looked, poll = 0, 0.0, float("-inf"), 0.0
        while not self.stop.is_set():
            try:
                if time.monotonic() - looked >= LOOK_SECONDS:  # config.json, now and then
                    config = self.store.load_config()
                    if node not in settings.reachable(config):
                        return
                    poll, looked = settings.poll_seconds(config), time.monotonic()
                    box._config = None
                if time.monotonic() < due and not self.waiting(box, node):
                    self.stop.wait(QUEUE_LOOK_SECONDS)
                    continue
                moved = box.carry(node, linger=LINGER_SECONDS, stop=self.stop)
            except MailslotError as exc:
                failures += 1
                wait = min(MOST_BACKOFF_SECONDS, FIRST_BACKOFF_SECONDS * 2 ** (failures - 1))
                self.say(f"peer {node}: {exc}; trying again in {wait:g} s")
                self.stop.wait(wait)
                due = 0.0
                continue
            if moved:
                self.last_moved = time.monotonic()
                self.say(f"peer {node}: {moved} envelope(s) moved")
            failures, due = 0, time.monotonic() + poll
