"""The hook's side of this machine's relay: a session hook on a PostgreSQL store asks
the relay (:mod:`.relay`) over a Unix socket instead of importing ``psycopg`` (about
370 ms) and connecting on every prompt of every agent.

On the hook path, so it loads only mailslot's foundation (the socket checks are
:mod:`mailslot.core.local_socket`'s, on ``_socket``, not ``socket``). The relay is
trusted only when all of these hold, else the hook answers directly, as it would with
no relay (docs/security.md, "The hook relay"):

* its folder is a real folder (no link) owned by this user with mode 0700, and its
  socket a socket owned by this user with no permission for anyone else (0600);
* the process at the other end is this user's (``SO_PEERCRED``; where the system has
  none, no relay is used);
* it serves the very store address, ``HOME``, libpq settings (``PG*``) and Python this
  hook would connect with (:func:`~mailslot.core.local_socket.key_of`; the relay
  compares the whole key), so it
  reads with exactly the database role the hook's own connection would have;
* it answers within :data:`RELAY_SECONDS`.

Whatever the relay does before the hook's output is printed (refuses, dies, is slow,
sends garbage), the hook answers directly instead; once the output is printed nothing
is printed again, and a relay that dies before recording what was shown leaves it to
be shown again (redelivery, never loss).
"""

from __future__ import annotations

from ...core.local_socket import Frames, Place, connect, place, send
from ...core.local_socket import start as start_helper

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, TextIO

RELAY_SECONDS = 1.0
"""How long a hook waits for the relay's answer before answering directly: the direct
path (driver import and a connection, about half a second) still fits in the hook's
bound of three seconds."""
UNANSWERED = "\0unanswered"
""":func:`ask`'s answer when the relay did not answer: the hook answers directly."""

Relay = Place
"""Where the relay for one store and set of libpq settings lives, and its key."""


def wanted(location: str, env: Mapping[str, str]) -> Relay | None:
    """The relay for ``location``, or ``None``: not a PostgreSQL store, switched off
    (``MAILSLOT_RELAY=0``), or a system without Unix sockets or ``SO_PEERCRED``."""
    return place("relay", location, env)


def ask(relay: Relay, request: dict[str, Any], stdout: TextIO) -> str | None:
    """Have the relay answer the hook: print its output on ``stdout``, tell it whether
    the host took it, and return its problem line (``None``: none); or
    :data:`UNANSWERED`, with nothing printed, when the hook must answer itself."""
    sock = connect(relay, RELAY_SECONDS)
    if sock is None:
        return UNANSWERED
    try:
        frames = Frames(sock)
        try:
            send(sock, {**request, "key": relay.key})
            frame = frames.next()
        except OSError:  # slow (timed out), or gone
            return UNANSWERED
        if frame is None or "refused" in frame:
            return UNANSWERED
        if "out" not in frame:
            done = frame.get("done")
            return done if isinstance(done, str) else None
        out = frame["out"]
        if not isinstance(out, str):
            return UNANSWERED
        stdout.write(out)
        stdout.flush()
        from .host_io import reads

        try:  # printed: from here on, nothing is printed again, whatever the relay does
            send(sock, {"taken": reads(stdout)})
            sock.settimeout(None)  # recording takes what it takes: the hook's bound holds
            frame = frames.next()
        except OSError:
            return None
        done = frame.get("done") if frame is not None else None
        return done if isinstance(done, str) else None
    finally:
        sock.close()


def start(relay: Relay, location: str, env: Mapping[str, str]) -> None:
    """Start this machine's relay for ``location`` if none listened (the next hook uses
    it)."""
    start_helper(relay, "mailslot.frontends.hooks.relay", "MAILSLOT_RELAY_STORE", location, env)
