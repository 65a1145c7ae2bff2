"""This machine's hook relay for one PostgreSQL store: one process that keeps the
driver loaded and one connection open, and answers session hooks over a Unix socket,
so a hook on PostgreSQL costs what one on files does (docs/multi-host.md, "The hook
relay").

Started by the first hook that finds none (``python -m mailslot.frontends.hooks.relay``, the
store's address in ``MAILSLOT_RELAY_STORE``, detached: :func:`.relay_client.start`),
it holds an exclusive ``flock`` beside its socket for as long as it runs, so two never
serve one key, and exits after :data:`IDLE_SECONDS` with no hook
(``MAILSLOT_RELAY_IDLE_SECONDS``). Each hook is answered in a thread of its own by the
very code a hook runs directly (:func:`.hook_entry.answer`), with the hook's own
environment, identity and process facts, so the output is the same byte for byte.
It answers only this user's processes (``SO_PEERCRED``) asking with its own key
(the store, ``HOME`` and libpq settings it connects with): anything else is refused, and
the hook answers itself.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
from typing import Any

from ...access.identity import Identity
from ...backends import open_store
from ...core.accept_loop import Door, serve
from ...core.errors import MailslotError
from ...core.local_socket import FRAME_LIMIT, Frames, begin, listen, send
from . import host_io
from .hook_entry import answer
from .relay_client import Relay

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ...store.base import Store

IDLE_SECONDS = 600.0
"""A relay with no hook for this long exits (the next hook starts another)."""
ANSWER_SECONDS = 30.0
"""A hook whose request is not whole within this long, or that then sends nothing for
this long, is dropped."""
MAX_CONNECTIONS = 16
"""Hooks answered at once at most (a new one takes the place of one still sending its
request; with all sixteen being answered it is closed, and the hook answers itself).
With requests of up to :data:`~mailslot.core.local_socket.FRAME_LIMIT` bytes, this
bounds what the relay holds."""
REPLY_BYTES = 4096
"""A hook's frames after its request (whether its host took the output) are tiny."""


class Gone(Exception):
    """The hook went away before saying whether its host took the output."""


class RelayOut:
    """The hook's standard output as :func:`answer` writes it: the text goes to the
    hook in one frame at ``flush``, which then waits for the hook to say whether the
    host took it. A hook gone by then stops :func:`answer` before it records anything,
    so what it was about to show is shown again next time."""

    def __init__(self, sock: socket.socket, frames: Frames) -> None:
        self._sock, self._frames = sock, frames
        self._text: list[str] = []
        self._taken: bool | None = None

    def write(self, text: str) -> int:
        self._text.append(text)
        return len(text)

    def flush(self) -> None:
        try:
            send(self._sock, {"out": "".join(self._text)})
            reply = self._frames.next()
        except OSError:
            reply = None
        if reply is None or not isinstance(reply.get("taken"), bool):
            raise Gone("the hook went away before its output was taken")
        self._taken = reply["taken"]
        self._text = []

    def taken(self) -> bool:
        return bool(self._taken)


def serve_one(store: Store, relay: Relay, sock: socket.socket,
              request: dict[str, Any] | None, rest: bytes) -> None:
    """Answer one hook's ``request`` on ``sock`` (in a thread of its own; the accept
    loop checked its peer, read the request and closes the socket after)."""
    try:
        sock.settimeout(ANSWER_SECONDS)
        if request is None or request.get("key") != relay.key:
            send(sock, {"refused": "not this relay's store or settings"})
            return
        out = RelayOut(sock, Frames(sock, rest, REPLY_BYTES))
        problem = _answer(store, request, out)
        if problem is not Gone:
            send(sock, {"done": problem})
    except OSError:
        return


def _answer(store: Store, request: dict[str, Any], out: RelayOut) -> str | type[Gone] | None:
    """The hook's answer, its problem line made as :func:`.hook_entry.run_hook` makes it."""
    try:
        env, payload, facts = request["env"], request["payload"], request["facts"]
        name, source, path = request["identity"]
        if not (isinstance(env, dict) and all(isinstance(v, str) for v in env.values())
                and isinstance(payload, dict) and isinstance(facts, dict)
                and isinstance(name, str) and isinstance(source, str)):
            return "the relay was sent a malformed hook"
        call = host_io.request(host_io.known(str(request["host"])), str(request["event"]),
                               payload, env)
        if call is None:
            return f"unknown hook {request['host']!r} {request['event']!r} (see docs/hooks.md)"
        return answer(store, call, Identity(name, source, path if isinstance(path, str)
                                            else None),
                      env, out, out.taken, lambda: facts)  # type: ignore[arg-type]
    except Gone:
        return Gone
    except MailslotError as exc:
        return str(exc)
    except Exception as exc:  # as a direct hook would say it
        return f"{type(exc).__name__}: {exc}"


def main() -> int:
    begun = begin("relay", IDLE_SECONDS, os.environ)
    if isinstance(begun, int):
        return begun
    relay, location, idle = begun
    listener = listen(relay)
    if listener is None:
        print(f"mailslot relay: {relay.folder} is not this user's private folder; "
              "hooks answer directly", file=sys.stderr)
        return 1
    store = open_store(location, os.environ)
    door = Door(line_bytes=FRAME_LIMIT, hello_seconds=ANSWER_SECONDS,
                connections=MAX_CONNECTIONS, idle=idle)
    try:
        serve(listener, door, lambda sock, request, rest: serve_one(store, relay, sock,
                                                                    request, rest))
        return 0  # idle: the next hook starts another
    finally:
        with contextlib.suppress(OSError):
            os.unlink(relay.socket)  # still under the lock: no newer relay's socket
        listener.close()
        getattr(store, "close", lambda: None)()  # a PostgreSQL store, by begin()


if __name__ == "__main__":
    sys.exit(main())
