"""One prompt into a saved session over the Agent Client Protocol (ACP), for a wake.

Some hosts continue a saved session only through ACP (JSON-RPC 2.0, one message a line
on the program's standard input and output; agentclientprotocol.com): mailslot is then
the client. It sends ``initialize``, ``session/load`` of the session and one
``session/prompt`` carrying the notice, and counts the agent as woken when that prompt
ends (any ``stopReason``). While the turn runs it answers what an agent may ask of its
client: a ``session/request_permission`` is answered ``cancelled`` (mailslot never
approves a tool; a person decides that) and any other request is refused as unknown
(no files, no terminal). The replayed history and the turn's updates are read and
dropped, like any program's output in a wake (:mod:`.process`).

The program runs without a shell in its own process group and is ended after the turn,
at the timeout, or when the watcher stops; an error the agent answers becomes the reason
(one line, cut short), never its output.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import tempfile
import threading
import time

from .process import Spawn, end, start, stderr_said

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any

PROTOCOL_VERSION = 1
_TICK_SECONDS = 0.2
_REASON_CHARS = 200


def prompt(spawn: Spawn, session: str, cwd: str, text: str, timeout: float,
           stop: threading.Event) -> str | None:
    """Run ``spawn`` as an ACP agent and prompt ``session`` (in the absolute ``cwd``) with
    ``text``; ``None`` once the turn ended, else why not (one line)."""
    name = os.path.basename(spawn.argv[0])
    with tempfile.TemporaryFile() as err:
        proc = start(spawn, err, stdout=subprocess.PIPE, cwd=cwd)
        if isinstance(proc, str):
            return proc
        client = _Client(proc, name)
        try:
            failed = client.converse(session, cwd, text, timeout, stop)
        finally:
            client.close()
        if failed is None:
            return None
        return failed + stderr_said(err, spawn.env)


class _Client:
    """The client side of one ACP conversation with a running agent."""

    def __init__(self, proc: subprocess.Popen[bytes], name: str) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc = proc
        self.name = name
        self.stdin: IO[bytes] = proc.stdin
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.next_id = 0
        self.reader = threading.Thread(target=self._read, args=(proc.stdout,), daemon=True)
        self.reader.start()

    def close(self) -> None:
        """End the agent and its process group, and let go of its pipes."""
        with contextlib.suppress(OSError):
            self.stdin.close()  # an agent that reads its input to the end exits now
        end(self.proc)
        self.reader.join(_TICK_SECONDS)
        if not self.reader.is_alive() and self.proc.stdout is not None:
            self.proc.stdout.close()

    def _read(self, stdout: IO[bytes]) -> None:
        for line in stdout:
            self.lines.put(line)
        self.lines.put(None)

    def converse(self, session: str, cwd: str, text: str, timeout: float,
                 stop: threading.Event) -> str | None:
        deadline = time.monotonic() + timeout
        steps: tuple[tuple[str, dict[str, Any]], ...] = (
            ("initialize", {"protocolVersion": PROTOCOL_VERSION, "clientCapabilities": {
                "fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}}),
            ("session/load", {"sessionId": session, "cwd": cwd, "mcpServers": []}),
            ("session/prompt", {"sessionId": session,
                                "prompt": [{"type": "text", "text": text}]}),
        )
        for method, params in steps:
            failed = self._call(method, params, deadline, stop)
            if failed is not None:
                return failed
        return None

    def _send(self, message: dict[str, Any]) -> bool:
        try:
            self.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
            self.stdin.flush()
        except OSError:  # the agent has gone: its exit is the reason
            return False
        return True

    def _call(self, method: str, params: dict[str, Any], deadline: float,
              stop: threading.Event) -> str | None:
        """Send one request and serve the agent until its answer; why it failed, if so."""
        self.next_id += 1
        ours = self.next_id
        if not self._send({"id": ours, "method": method, "params": params}):
            return f"{self.name} closed its input before {method}"
        while True:
            if stop.is_set():
                return f"{self.name} was stopped: the watcher is stopping"
            if time.monotonic() >= deadline:
                return f"{self.name} did not answer {method} in time (stopped)"
            try:
                line = self.lines.get(timeout=_TICK_SECONDS)
            except queue.Empty:
                continue
            if line is None:
                status = self.proc.wait()
                return f"{self.name} exited with status {status} before answering {method}"
            try:
                message = json.loads(line)
            except ValueError:
                continue  # not a protocol line: output, dropped
            if not isinstance(message, dict):
                continue
            if "method" in message and "id" in message:
                self._answer(message)
            elif message.get("id") == ours:
                error = message.get("error")
                if error is None:
                    return None
                said = error.get("message") if isinstance(error, dict) else None
                return f"{self.name} refused {method}: {_one_line(said)}"

    def _answer(self, request: dict[str, Any]) -> None:
        """What a client that approves nothing and offers nothing says to a request."""
        if request["method"] == "session/request_permission":
            self._send({"id": request["id"], "result": {"outcome": {"outcome": "cancelled"}}})
        else:
            self._send({"id": request["id"],
                        "error": {"code": -32601, "message": "not offered by mailslot"}})


def _one_line(text: object) -> str:
    shown = "".join(c if c.isprintable() else " " for c in str(text or "no reason given"))
    return shown if len(shown) <= _REASON_CHARS else shown[:_REASON_CHARS - 3] + "..."
