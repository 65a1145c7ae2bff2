"""The file store's fences (rules in :mod:`mailslot.access.fencing`)::

    fences/<agent>/<session>    the id of the session that replaced <session>

A part of :class:`~mailslot.backends.files.file_store.FileStore` (a base class of it). A fence is
created once and never removed: a replaced session stays replaced. ``os`` only.
"""

from __future__ import annotations

import os

from ...core.durable import fsync_dir
from ...core.errors import UnsafePath
from ...core.names import SESSION_KEY, is_valid_name
from .fs import read_file, write_new
from .layout import MailboxFiles


class FenceFiles(MailboxFiles):
    """Replaced sessions of :class:`~mailslot.backends.files.file_store.FileStore`."""

    def _fence(self, agent: str, session: str, *, create: bool = False) -> str:
        if not is_valid_name(agent) or not SESSION_KEY.fullmatch(session):
            raise UnsafePath(f"session {session!r} of {agent!r} is not safe as a file name")
        return os.path.join(self._folder("fences", agent, create=create), session)

    def fence(self, agent: str, session: str, by: str) -> None:
        path = self._fence(agent, session, create=True)
        try:
            write_new(path, by.encode(), sync=True)
        except FileExistsError:
            return  # replaced already: the first replacement stands
        fsync_dir(os.path.dirname(path))

    def fenced_by(self, agent: str, session: str) -> str | None:
        try:
            return read_file(self._fence(agent, session)).decode("utf-8", "replace")
        except FileNotFoundError:
            return None
