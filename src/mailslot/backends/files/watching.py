"""The file store's watching: file-system events for a few folders (watchdog).

inotify on Linux, FSEvents on macOS. An event only means "look again": callers re-read
the store, so a missed or merged event costs at most one polling interval, never a
message. Only changes count (a file created, moved, deleted or written): opening or
reading a file does not, so a watcher that reads the folders it watches is not woken by
its own reads (it would spin a CPU core). Where no native backend is there (or it
fails, e.g. out of inotify watches), :func:`observe` returns ``None`` and the caller
polls. Only long-running front ends reach this (watch, a host's waiter,
``serve --channel``), through :meth:`~mailslot.backends.files.file_store.FileStore.watch`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from watchdog.observers.api import BaseObserver

BACKENDS = {"InotifyObserver": "inotify", "FSEventsObserver": "FSEvents",
            "KqueueObserver": "kqueue", "WindowsApiObserver": "ReadDirectoryChangesW"}


class FolderWatch:
    """A running observer: what :meth:`FileStore.watch` hands back."""

    def __init__(self, observer: BaseObserver, what: str) -> None:
        self._observer = observer
        self.how = f"{what} ({BACKENDS[type(observer).__name__]} events)"

    def close(self) -> None:
        self._observer.stop()
        self._observer.join(timeout=2)


def observe(
    paths: Sequence[str], kick: Callable[[], None], *, recursive: bool = False,
    creations_only: bool = False,
) -> BaseObserver | None:
    """A started observer calling ``kick`` on changes under ``paths``, or ``None``.

    ``creations_only`` ignores moves and deletions (a queue whose entries are only ever
    linked in). ``kick`` runs on the observer's thread: keep it to setting an event.
    """
    try:
        from watchdog.events import (
            DirCreatedEvent,
            DirDeletedEvent,
            DirMovedEvent,
            FileClosedEvent,
            FileCreatedEvent,
            FileDeletedEvent,
            FileModifiedEvent,
            FileMovedEvent,
            FileSystemEvent,
            FileSystemEventHandler,
        )
        from watchdog.observers import Observer
    except ImportError:
        return None

    import warnings

    # A folder made under a recursive watch together with one inside it is registered
    # twice by watchdog, which then warns from its own thread: harmless (the second
    # registration replaces the first), and nothing a user should see or act on.
    warnings.filterwarnings("ignore", message="Callback with id .* already exists",
                            category=RuntimeWarning)

    class Kick(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            kick()

    observer = Observer()
    if type(observer).__name__ not in BACKENDS:
        return None  # watchdog would poll by itself; the caller's own polling is cheaper
    created: list[type[FileSystemEvent]] = [FileCreatedEvent, DirCreatedEvent]
    changes = [*created, FileMovedEvent, DirMovedEvent, FileDeletedEvent, DirDeletedEvent,
               FileModifiedEvent, FileClosedEvent]
    try:
        for path in paths:
            observer.schedule(Kick(), path, recursive=recursive,
                              event_filter=created if creations_only else changes)
        observer.start()
    except OSError:
        return None
    return observer
