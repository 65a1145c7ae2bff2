"""A door into a running program: a Unix socket that takes one JSON object a line.

Some hosts take messages into a live session on a Unix socket of their own, and answer,
when they do not deliver, on a socket of the sender's. This module holds what any such
door needs and no host's shapes: the checks that a file or socket is this user's own and
private before mailslot trusts it, one connection that writes lines, and a listener for
the answers. A host's module says what the lines are.

Every failure is :class:`DoorError` with one line that names the path and what is wrong;
no ``OSError`` leaves this module.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import stat
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..core.durable import open_file
from ..core.errors import UnsafePath

MAX_ANSWER = 1 << 20
"""The most a listener reads from one connection (the door's own line limit)."""
_SETTLED_EVERY = 0.02
_LAST_LOOK = 0.05


class DoorError(Exception):
    """The door cannot be used: one line, naming the path."""


class UnknownShape(DoorError):
    """The door, or what it answered, is not in the shape this mailslot speaks: the
    program behind it changed. Reported as a failure, never worked around quietly."""


def own_file(path: str, *, private: bool, limit: int = 65536) -> bytes:
    """The bytes of ``path``, a regular file (not a link) owned by this user that no
    one else may write (``private``: that no one else may read either)."""
    return own_file_and_stat(path, private=private, limit=limit)[0]


def own_file_and_stat(path: str, *, private: bool, limit: int = 65536
                      ) -> tuple[bytes, os.stat_result]:
    """:func:`own_file`, with the file's ``fstat`` as it was read (its time says when
    it was written)."""
    try:
        fd = open_file(path, os.O_RDONLY)  # no link, never waiting, regular files only
    except (OSError, UnsafePath) as exc:
        raise DoorError(f"{path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        info = os.fstat(fd)
        _owned(path, info, 0o077 if private else 0o022)
        data = os.read(fd, limit + 1)
    except OSError as exc:
        raise DoorError(f"{path}: {exc.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise DoorError(f"{path} is larger than {limit} bytes")
    return data, info


def own_folder(path: str) -> None:
    """``path`` is a folder (not a link) of this user's that no one else may write to
    (so no one else can put another socket in a socket's place)."""
    _own_entry(path, stat.S_ISDIR, "a folder", 0o022)


def own_socket(path: str) -> None:
    """``path`` is an absolute path to a socket (not a link) of this user's, mode 0600."""
    if not os.path.isabs(path):
        raise DoorError(f"{path!r} is not an absolute socket path")
    _own_entry(path, stat.S_ISSOCK, "a socket", 0o077)


def _own_entry(path: str, kind: Callable[[int], bool], what: str, others: int) -> None:
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise DoorError(f"{path}: {exc.strerror}") from None
    if not kind(info.st_mode):
        raise DoorError(f"{path} is not {what}")
    _owned(path, info, others)


def _owned(path: str, info: os.stat_result, others: int) -> None:
    if info.st_uid != os.geteuid():
        raise DoorError(f"{path} is owned by uid {info.st_uid}, not by this user")
    if info.st_mode & others:
        raise DoorError(f"{path} is mode {stat.S_IMODE(info.st_mode):o}: others may "
                        f"{'read or write' if others == 0o077 else 'write'} it")


def send_lines(path: str, lines: Sequence[Mapping[str, Any]], timeout: float) -> None:
    """Connect to ``path``, write each object as one JSON line, and close our side."""
    data = b"".join(json.dumps(line, ensure_ascii=False).encode("utf-8") + b"\n"
                    for line in lines)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.settimeout(timeout)
        conn.connect(path)
        conn.sendall(data)
        conn.shutdown(socket.SHUT_WR)
    except TimeoutError:
        raise DoorError(f"{path} did not take the message within {timeout:g} s") from None
    except OSError as exc:
        raise DoorError(f"cannot write to {path}: {exc.strerror or exc}") from None
    finally:
        conn.close()


class Listener:
    """A socket of ours at ``path`` (mode 0600) that collects the answers sent to it;
    removed on close. Use as a context manager."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._server.bind(path)
            os.chmod(path, 0o600)
            self._server.listen(8)
        except OSError as exc:
            self.close()
            raise DoorError(f"cannot listen on {path}: {exc.strerror or exc}") from None
        self._server.setblocking(False)

    def __enter__(self) -> Listener:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._server.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)

    def answers(self, seconds: float, settled: Callable[[], bool] | None = None
                ) -> list[str]:
        """The lines of the first connection that sends any within ``seconds``
        (``[]``: none came). Empty connections (a liveness probe) are skipped.
        ``settled``, asked every few hundredths of a second, ends the wait early when
        it says the other side has acted (after one last look for an answer)."""
        deadline = time.monotonic() + seconds
        last = False
        while (left := deadline - time.monotonic()) > 0:
            if not last and settled is not None and settled():
                last, deadline = True, time.monotonic() + _LAST_LOOK
            step = left if settled is None or last else min(left, _SETTLED_EVERY)
            ready, _, _ = select.select([self._server], [], [], step)
            if not ready:
                continue
            try:
                conn, _ = self._server.accept()
            except BlockingIOError:
                continue
            except OSError as exc:
                raise DoorError(f"{self.path}: {exc.strerror or exc}") from None
            lines = _read(conn, max(deadline - time.monotonic(), 0.1))
            if lines:
                return lines
        return []


def _read(conn: socket.socket, seconds: float) -> list[str]:
    data = b""
    try:
        conn.settimeout(seconds)
        while len(data) <= MAX_ANSWER:
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass  # what came before the timeout or reset is still the answer
    finally:
        conn.close()
    text = data[:MAX_ANSWER].decode("utf-8", "replace")
    return [line for line in text.split("\n") if line.strip()]
