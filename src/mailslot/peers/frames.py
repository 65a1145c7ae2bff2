"""Frames between two nodes: one JSON object each, over a pair of byte streams.

The remote end (``mailslot peer serve``, over ssh) first writes the line
:data:`PREAMBLE`; the client skips whatever comes before it (a login script that prints
something to standard output), up to :data:`NOISE_LIMIT` bytes. After it, each frame is
a 4-byte big-endian length and that many bytes of UTF-8 JSON, at most
:data:`MAX_FRAME` bytes. A frame that is not a JSON object, too long, or cut short ends
the conversation (:class:`WireError`); nothing in it is acted on.
"""

from __future__ import annotations

import json
import os
import select
import time

from ..core.errors import MailslotError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PREAMBLE = b"MAILSLOT-PEER/1\n"
NOISE_LIMIT = 64 * 1024
MAX_FRAME = 64 * 1024 * 1024


class WireError(MailslotError):
    """The other end broke the framing, went away, or did not answer in time."""


def encode(frame: dict[str, Any]) -> bytes:
    data = json.dumps(frame, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if len(data) > MAX_FRAME:
        raise WireError(f"a frame of {len(data)} bytes is over the {MAX_FRAME} a peer takes")
    return len(data).to_bytes(4, "big") + data


class Stream:
    """Frames read from a file descriptor, with deadlines (``select``), and written to
    another."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.read_fd, self.write_fd = read_fd, write_fd
        self._buffer = b""

    def send(self, frame: dict[str, Any]) -> None:
        data = encode(frame)
        try:
            while data:
                data = data[os.write(self.write_fd, data):]
        except OSError as exc:
            raise WireError(f"the link broke while sending ({exc.strerror or exc})") from None

    def readable(self, timeout: float) -> bool:
        """Is a frame (or the end) ready within ``timeout`` seconds?"""
        if self._buffer:
            return True
        ready, _, _ = select.select([self.read_fd], [], [], max(0.0, timeout))
        return bool(ready)

    def _more(self, deadline: float | None) -> None:
        """Read what is there into the buffer (waiting until ``deadline`` at most)."""
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            raise WireError("the other end did not answer in time")
        ready, _, _ = select.select([self.read_fd], [], [], left)
        if not ready:
            return
        try:
            chunk = os.read(self.read_fd, 1 << 16)
        except OSError as exc:
            raise WireError(f"the link broke ({exc.strerror or exc})") from None
        if not chunk:
            raise WireError("the other end closed the link")
        self._buffer += chunk

    def _fill(self, want: int, deadline: float | None) -> bytes:
        while len(self._buffer) < want:
            self._more(deadline)
        taken, self._buffer = self._buffer[:want], self._buffer[want:]
        return taken

    def preamble(self, timeout: float) -> None:
        """Skip to just after :data:`PREAMBLE` (the client's first read)."""
        deadline = time.monotonic() + timeout
        while PREAMBLE not in self._buffer:
            if len(self._buffer) > NOISE_LIMIT:
                raise WireError("the remote side printed no mailslot greeting (is "
                                "--remote-mailslot a mailslot?)")
            self._more(deadline)
        self._buffer = self._buffer[self._buffer.index(PREAMBLE) + len(PREAMBLE):]

    def receive(self, timeout: float | None = None) -> dict[str, Any]:
        deadline = None if timeout is None else time.monotonic() + timeout
        size = int.from_bytes(self._fill(4, deadline), "big")
        if size > MAX_FRAME:
            raise WireError(f"a frame of {size} bytes is over the {MAX_FRAME} a peer takes")
        try:
            frame = json.loads(self._fill(size, deadline).decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise WireError("a frame that is not JSON") from None
        if not isinstance(frame, dict):
            raise WireError("a frame that is not a JSON object")
        return frame
