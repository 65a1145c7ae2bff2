"""What a host sends a command hook on stdin, and the JSON it accepts back.

Each host's events, session-id fields and output shapes are its own
(:mod:`mailslot.host_registry`); the sources are named in tests/fixtures/hosts/README.md with the
inputs recorded there. Only events whose output can put text in front of the model are
offered: a host whose prompt hook cannot add context gets mail at the moments that can
(:attr:`~mailslot.host_registry.host.Host.shows_at`). Mid-turn mail comes from a post-tool hook
that adds context to the model's next request.

Some hosts also run another host's hook settings
(:attr:`~mailslot.host_registry.host.Host.lends_to`), so a hook registered for one may really
be called by another. The caller is recognised
from its input (see :func:`caller_of`) and then treated by what it can do, with its own
output shapes or the lender's.
"""

from __future__ import annotations

import os
from stat import S_ISFIFO, S_ISSOCK

from ... import host_registry as hosts
from ...core import jsontext

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import TextIO

    from ...host_registry import Host

    Payload = dict[str, object]

CONTEXT_LIMIT = 10_000
"""Injected text stays under this many characters: the lowest limit a host documents
(:attr:`~mailslot.host_registry.host.Host.context_limit`); the others document none lower."""


def known(host: str) -> Host | None:
    """The host called ``host``; ``None`` for one mailslot does not know."""
    try:
        return hosts.host(host)
    except KeyError:
        return None


class Request:
    """One hook call as the delivery rules need it."""

    __slots__ = ("caller", "host", "moment", "record", "session", "shape", "stop_active",
                 "tools")

    def __init__(self, caller: Host, shape: Host, moment: str | None, session: str | None,
                 stop_active: bool, tools: str, record: str | None = None) -> None:
        self.caller = caller.name  # the host that really runs the hook
        self.host = caller
        self.record = record  # the host's record of the session (Host.record_of)
        self.shape = shape  # whose output JSON it reads
        self.tools = tools  # how its model sees mailslot's tools (Host.tools)
        self.moment = moment  # None: this caller cannot show text at this event
        self.session = session
        self.stop_active = stop_active


def parse_payload(raw: bytes) -> Payload:
    """The host's JSON object; ``{}`` for anything else (garbage never stops a hook)."""
    try:
        data = jsontext.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: deeply nested arrays
        return {}
    return data if isinstance(data, dict) else {}


def caller_of(host: Host, payload: Payload, env: Mapping[str, str]) -> Host:
    """Which host really runs a hook registered for ``host``: ``host``, unless one that
    borrows its hooks recognises itself in the input."""
    for name in host.lends_to:
        borrower = hosts.host(name)
        if borrower.runs_borrowed(payload, env):
            return borrower
    return host


def request(host: Host | None, event: str, payload: Payload,
            env: Mapping[str, str]) -> Request | None:
    """The call, or ``None`` when ``HOST EVENT`` is not one mailslot knows."""
    moment = None if host is None else host.events.get(event)
    if host is None or moment is None:
        return None
    caller = caller_of(host, payload, env)
    shape = caller if caller.own_shapes else host
    if moment not in caller.shows_at:
        return Request(caller, shape, None, None, False, "{}")
    session = None
    for field in caller.session_fields:
        value = payload.get(field)
        if isinstance(value, str) and value:
            session = value
            break
    record = caller.record_of(payload, env) if session and caller.record_holds else None
    return Request(caller, shape, moment, session, caller.continuing(payload),
                   caller.tools(env), record)


def output(call: Request, text: str | None) -> Payload:
    """The JSON object to print: ``{}`` when there is nothing to show."""
    if not text or call.moment is None:
        return {}
    return call.shape.outputs[call.moment](text)


def reads(stdout: TextIO) -> bool:
    """Did the output go where a host reads it? A host reads a hook's output from a
    pipe (or a socket); a file, a terminal or the null device is no model's, so what
    went there is not surfaced. A stream without a descriptor is an embedding
    program's own, which took it."""
    try:
        mode = os.fstat(stdout.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return True  # io.UnsupportedOperation is both an OSError and a ValueError
    return S_ISFIFO(mode) or S_ISSOCK(mode)
