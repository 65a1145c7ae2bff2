"""How a hook reads its host's input: bounded in size and in time.

Shared by the session hooks (:mod:`.hook_entry`) and a host's background waiter (:mod:`.wait`). On
the hook path: ``select`` and ``time`` are loaded only when stdin is a real stream.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO

STDIN_LIMIT = 8 << 20
"""Hosts send a few kilobytes; more than this is not a hook's input."""
INPUT_SECONDS = 1.0
"""How long a hook waits for its input to end before answering from what came."""


def read_input(stdin: TextIO | None, seconds: float = INPUT_SECONDS) -> bytes:
    """The host's input; nothing from a terminal (a person trying the command).

    Read until end of file, :data:`STDIN_LIMIT` bytes or ``seconds``, whichever comes
    first: a host that leaves stdin open still gets its answer, from what it sent.
    """
    try:
        if stdin is None or stdin.isatty():
            return b""
        fd = stdin.fileno()
    except (AttributeError, OSError, ValueError):  # closed, or not a real stream
        try:
            return stdin.buffer.read(STDIN_LIMIT) if stdin is not None else b""
        except (AttributeError, OSError, ValueError):
            return b""
    import select
    import time

    chunks: list[bytes] = []
    size = 0
    end = time.monotonic() + seconds
    try:
        while size < STDIN_LIMIT and (left := end - time.monotonic()) > 0:
            if not select.select([fd], [], [], left)[0]:
                break  # the host is still holding stdin open: answer what we have
            chunk = os.read(fd, min(1 << 16, STDIN_LIMIT - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError:
        pass
    return b"".join(chunks)
