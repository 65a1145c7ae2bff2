"""File-system events for a few folders: inotify on Linux, FSEvents on macOS (watchdog).

An event only means "look again": callers re-read the store, so a missed or merged event
costs at most one polling interval, never a message. Where no native backend is there
(or it fails, e.g. out of inotify watches), :func:`observe` returns ``None`` and the
caller polls instead. Only long-running front ends import this (watch, the Claude waiter,
``serve --channel``); the CLI and the session hooks never do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from watchdog.observers.api import BaseObserver

BACKENDS = {"InotifyObserver": "inotify", "FSEventsObserver": "FSEvents",
            "KqueueObserver": "kqueue", "WindowsApiObserver": "ReadDirectoryChangesW"}


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
            FileCreatedEvent,
            FileSystemEvent,
            FileSystemEventHandler,
        )
        from watchdog.observers import Observer
    except ImportError:
        return None

    class Kick(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            kick()

    observer = Observer()
    if type(observer).__name__ not in BACKENDS:
        return None  # watchdog would poll by itself; the caller's own polling is cheaper
    only = [FileCreatedEvent, DirCreatedEvent] if creations_only else None
    try:
        for path in paths:
            observer.schedule(Kick(), path, recursive=recursive, event_filter=only)
        observer.start()
    except OSError:
        return None
    return observer


def backend_name(observer: BaseObserver) -> str:
    """``inotify``, ``FSEvents`` ...: for messages saying how a folder is watched."""
    return BACKENDS.get(type(observer).__name__, type(observer).__name__)
