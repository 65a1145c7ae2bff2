"""The stdio wire of ``mailslot serve``: the SDK's framing over pipes the event loop reads
and writes itself, with no worker thread per line.

Why (issue 11): the SDK's ``stdio_server`` reads each line, writes each answer and
flushes it through anyio's worker threads: three thread hops a call, which on a busy
two-core machine were a large part of a send's round trip. Here stdin is read when the
event loop sees it readable, and answers go out through an asyncio pipe transport (a
non-blocking write, the rest buffered and sent as the pipe drains), so a call costs no
hop at all. Message parsing and serialising stay the SDK's: its ``stdio_server`` is given
these two streams in place of its own.

Kept from the SDK: while serving, fd 0 reads the null device and fd 1 writes to stderr,
so a stray ``print`` or a child process cannot corrupt the wire; both are put back at
the end. Anything but a pipe or a socket on both ends (a file, a terminal), or an event
loop that is not asyncio's, gets the SDK's own transport.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import stat
from collections.abc import AsyncIterator
from typing import Any

import anyio

_CHUNK = 1 << 16
_PIPE_BYTES = 1 << 20  # Linux's default most for an unprivileged process


class _Lines:
    """stdin as the SDK reads it (``async for line in stdin``): whole lines, decoded."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = bytearray()

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[:end + 1])
                del self._buffer[:end + 1]
                return line.decode("utf-8", "replace")
            # Readable means a read returns at once (a pipe's read gives what is there),
            # so the descriptor stays blocking: nothing shared with the host is changed.
            await anyio.wait_readable(self._fd)
            chunk = os.read(self._fd, _CHUNK)
            if not chunk:
                if not self._buffer:
                    raise StopAsyncIteration
                line = bytes(self._buffer)
                self._buffer.clear()
                return line.decode("utf-8", "replace")
            self._buffer += chunk


class _Drained(asyncio.Protocol):
    """Flow control for the answers: ``flush`` waits while the pipe is full."""

    def __init__(self) -> None:
        self._ready = asyncio.Event()
        self._ready.set()

    def pause_writing(self) -> None:
        self._ready.clear()

    def resume_writing(self) -> None:
        self._ready.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self._ready.set()

    async def drained(self) -> None:
        await self._ready.wait()


class _Answers:
    """stdout as the SDK writes it (``await write(text)``, ``await flush()``)."""

    def __init__(self, transport: asyncio.WriteTransport, protocol: _Drained) -> None:
        self._transport = transport
        self._protocol = protocol

    async def write(self, text: str) -> None:
        if self._transport.is_closing():
            raise anyio.ClosedResourceError
        self._transport.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._protocol.drained()


def _streamable(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


@contextlib.asynccontextmanager
async def _wire() -> AsyncIterator[tuple[_Lines, _Answers] | None]:
    """The two streams, with fd 0 and 1 diverted meanwhile; ``None``: use the SDK's."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # another event loop (trio)
        loop = None
    if loop is None or not (_streamable(0) and _streamable(1)):
        yield None
        return
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
    finally:
        os.close(null)
    with contextlib.suppress(OSError, AttributeError):  # Linux only, best effort
        # A 200-message answer (~600 KB) fits in one write: 64 KB at a time, the loop
        # woke for every piece the host read, and a long read took half as long again.
        fcntl.fcntl(wire_out, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    transport, protocol = await loop.connect_write_pipe(
        _Drained, os.fdopen(wire_out, "wb", buffering=0, closefd=False))
    try:
        yield _Lines(wire_in), _Answers(transport, protocol)
    finally:
        with anyio.move_on_after(1, shield=True):  # the last answers, if still queued
            while transport.get_write_buffer_size() and not transport.is_closing():
                await anyio.sleep(0.01)
        transport.close()
        os.set_blocking(wire_out, True)  # the pipe is the host's again, as it was
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        os.close(wire_in)
        os.close(wire_out)


async def run(server: Any) -> None:
    """Serve ``server`` (an ``MCPServer``) over stdin and stdout until stdin ends."""
    from mcp.server.stdio import stdio_server

    async with _wire() as wired:
        if wired is None:
            await server.run_stdio_async()
            return
        async with stdio_server(stdin=wired[0], stdout=wired[1]) as (read, write):  # type: ignore[arg-type]
            # The SDK's run_stdio_async, with these streams: it has no parameter for them.
            low = server._lowlevel_server
            await low.run(read, write, low.create_initialization_options())
