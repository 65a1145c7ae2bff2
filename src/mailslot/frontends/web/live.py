"""Live arrivals for open pages: one watcher over the store, fanned out as server-sent
events.

The store's :meth:`~mailslot.store.Store.watch_mail` kicks a thread when anything may
have changed (or, where a store cannot tell, the thread looks every
:data:`POLL_SECONDS`); the thread compares where every message is now with where it
was, and hands each open page one ``mail`` event naming the new messages. A page then
re-reads its own live parts; the event itself carries only ids, names and subjects,
which the page's script shows as text.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import AsyncIterator

from ...core.errors import MailslotError
from ...service import browse
from ...store import Store
from ...store.records import Watching

POLL_SECONDS = 0.5
RECHECK_SECONDS = 5.0
"""With events, still look this often: a change inside a folder created a moment before
can be missed by the file-system watch (its own watch is added after the fact)."""
HEARTBEAT_SECONDS = 15.0
SETTLE_SECONDS = 0.05  # a send touches several folders: look once they are all there


class Hub:
    """Watches the store while the page runs and tells every subscriber what changed."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._subscribers: set[tuple[asyncio.AbstractEventLoop, asyncio.Queue[str | None]]] = set()
        self._lock = threading.Lock()
        self._kicked = threading.Event()
        self._stop = threading.Event()
        self._watching: Watching | None = None
        self._thread: threading.Thread | None = None
        self._ended = False

    def start(self) -> None:
        self._watching = self.store.watch_mail(self._kicked.set)
        self._thread = threading.Thread(target=self._run, name="mailslot-web-live",
                                        daemon=True)
        self._thread.start()

    @property
    def how(self) -> str:
        """How open pages learn of changes: the store's watch, or looking every
        :data:`POLL_SECONDS` where it cannot tell (said at the start of each stream)."""
        if self._watching is not None:
            return f"watching {self._watching.how}"
        return f"polling every {POLL_SECONDS:g} s"

    def end_streams(self) -> None:
        """End every open event stream now (the server is stopping: Ctrl-C)."""
        with self._lock:
            self._ended = True
        self._publish(None)

    def stop(self) -> None:
        self._stop.set()
        self._kicked.set()
        if self._watching is not None:
            self._watching.close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._publish(None)

    def _run(self) -> None:
        before = self._snapshot()
        wait = RECHECK_SECONDS if self._watching is not None else POLL_SECONDS
        while not self._stop.is_set():
            self._kicked.wait(wait)
            if self._stop.wait(SETTLE_SECONDS):
                return
            self._kicked.clear()
            after = self._snapshot()
            if after == before:
                continue
            try:
                new = browse.arrivals(self.store, before, after)
            except MailslotError:
                new = []
            before = after
            self._publish(json.dumps({"arrivals": new}, ensure_ascii=False))

    def _snapshot(self) -> browse.Snapshot:
        try:
            return browse.snapshot(self.store)
        except MailslotError:
            return {}

    def _publish(self, data: str | None) -> None:
        with self._lock:
            subscribers = list(self._subscribers)
        for loop, queue in subscribers:
            with contextlib.suppress(RuntimeError):  # that page's loop has closed
                loop.call_soon_threadsafe(queue.put_nowait, data)

    async def events(self) -> AsyncIterator[str]:
        """The event stream of one open page, until the page goes or the hub stops."""
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        key = (asyncio.get_running_loop(), queue)
        with self._lock:
            if self._ended:
                return
            self._subscribers.add(key)
        try:
            yield f"retry: 2000\n: live: {self.how}\n\n"  # a comment: pages ignore it
            while True:
                try:
                    data = await asyncio.wait_for(queue.get(), HEARTBEAT_SECONDS)
                except TimeoutError:
                    yield ": still here\n\n"
                    continue
                if data is None:
                    return
                yield f"event: mail\ndata: {data}\n\n"
        finally:
            with self._lock:
                self._subscribers.discard(key)
