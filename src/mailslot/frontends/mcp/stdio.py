"""The stdio wire of ``mailslot serve``: the SDK's public path, or a faster one of ours.

The public path is ``MCPServer.run_stdio_async``: the SDK's ``stdio_server`` feeding its
low-level ``Server.run``, as the reference servers run. It reads each line, writes each
answer and flushes it through anyio's worker threads: three thread hops a call, which on
a busy two-core machine were a large part of a send's round trip.

The fast wire is a transport of mailslot's own, beside the SDK's: stdin is read when the
event loop sees it readable, answers go out through an asyncio pipe transport (a
non-blocking write, the rest buffered and sent as the pipe drains), and the messages
travel to and from the low-level ``Server.run`` on the memory streams that method
declares, parsed and serialised by the SDK's own message adapter. ``bench_mcp_stdio``
measures the two in one run (docs/performance.md).

What the fast wire needs of the SDK is found and tried once at start-up, before any
descriptor is touched (:func:`sdk_shape`): ``MCPServer`` keeps its low-level server in a
private attribute, so another 2.x revision may hold it otherwise. If anything is not
as expected, or either end is not a pipe or a socket (a file, a terminal), or the event
loop is not asyncio's, the public path serves instead.

Kept from the SDK: while serving, fd 0 reads the null device and fd 1 writes to stderr,
so a stray ``print`` or a child process cannot corrupt the wire; both are put back at
the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import inspect
import json
import os
import stat
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from . import answered

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

    from mcp.server.mcpserver import MCPServer
    from mcp.shared.message import SessionMessage

_CHUNK = 1 << 16
_PIPE_BYTES = 1 << 20  # Linux's default most for an unprivileged process
_PROBE = '{"jsonrpc": "2.0", "id": 1, "method": "ping"}'

_Incoming = Any  # SessionMessage | Exception, as Server.run reads them
_Serve = Callable[["MemoryObjectReceiveStream[_Incoming]",
                   "MemoryObjectSendStream[SessionMessage]"], Awaitable[None]]


@dataclass(frozen=True)
class SdkShape:
    """What the fast wire takes from the SDK, each piece checked at start-up."""

    serve: _Serve  # the low-level server's ``run`` over two streams, options bound
    parse: Callable[[str], SessionMessage]  # a line of the wire into a message
    dump: Callable[[SessionMessage], str]  # a message into a line (without the newline)


def sdk_shape(server: object) -> SdkShape | None:
    """The pieces of the SDK the fast wire uses, or ``None`` if this SDK lacks one."""
    try:
        from mcp_types import jsonrpc_message_adapter

        from mcp.server.lowlevel import Server
        from mcp.shared.message import SessionMessage
    except ImportError:
        return None
    low = getattr(server, "_lowlevel_server", None)  # MCPServer's, and private
    if not isinstance(low, Server) or not inspect.iscoroutinefunction(low.run):
        return None
    try:
        inspect.signature(low.run).bind(None, None, None)
        options = low.create_initialization_options()
    except (TypeError, ValueError, AttributeError):
        return None

    def serve(read: MemoryObjectReceiveStream[_Incoming],
              write: MemoryObjectSendStream[SessionMessage]) -> Awaitable[None]:
        return low.run(read, write, options)

    def parse(line: str) -> SessionMessage:
        return SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))

    def dump(message: SessionMessage) -> str:
        return message.message.model_dump_json(by_alias=True, exclude_unset=True)

    try:  # the SDK's own stdio transport parses and serialises exactly so
        if json.loads(dump(parse(_PROBE))) != json.loads(_PROBE):
            return None
    except Exception:  # any failure of the round trip: this SDK is shaped otherwise
        return None
    return SdkShape(serve, parse, dump)


async def run(server: MCPServer[Any]) -> None:
    """Serve ``server`` over stdin and stdout until stdin ends."""
    shape = sdk_shape(server)
    if shape is None:
        await server.run_stdio_async()
        return
    async with _wire() as wired:
        if wired is None:
            await server.run_stdio_async()
            return
        await _serve(shape, *wired)


async def _serve(shape: SdkShape, lines: _Lines, answers: _Answers) -> None:
    """Messages between the wire and ``Server.run``, as the SDK's ``stdio_server`` moves
    them: a line that does not parse is handed on as the error it raised."""
    to_server, from_wire = anyio.create_memory_object_stream[_Incoming](0)
    to_wire, from_server = anyio.create_memory_object_stream["SessionMessage"](0)

    async def read() -> None:
        async with to_server:
            async for line in lines:
                try:
                    message: _Incoming = shape.parse(line)
                except Exception as exc:  # the server answers it with a parse error
                    message = exc
                await to_server.send(message)

    async def write() -> None:
        with contextlib.suppress(anyio.ClosedResourceError):  # the host closed its end
            async with from_server:
                async for message in from_server:
                    await answers.send(shape.dump(message) + "\n")
                    for action in answered.taken(message.message):  # it is out: record
                        await anyio.to_thread.run_sync(action)

    answered.enable()
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read)
            tasks.start_soon(write)
            await shape.serve(from_wire, to_wire)
    finally:
        answered.enable(False)



class _Lines:
    """stdin as whole lines, decoded as the SDK decodes them (bad bytes replaced)."""

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
    """Flow control for the answers: a send waits while the pipe is full."""

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
    """stdout: each answer written at once, the rest sent as the host reads."""

    def __init__(self, transport: asyncio.WriteTransport, protocol: _Drained) -> None:
        self._transport = transport
        self._protocol = protocol

    async def send(self, text: str) -> None:
        if self._transport.is_closing():
            raise anyio.ClosedResourceError
        self._transport.write(text.encode("utf-8"))
        await self._protocol.drained()


def _streamable(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


@contextlib.asynccontextmanager
async def _wire() -> AsyncIterator[tuple[_Lines, _Answers] | None]:
    """The two ends, with fd 0 and 1 diverted meanwhile; ``None``: use the SDK's."""
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
