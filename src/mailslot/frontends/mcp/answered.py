"""What is recorded once an answer left on the MCP wire: the delivery ladder's
``surfaced`` receipt of a tool result that carried mail.

A tool runs before its result is serialised and written, so it cannot record that the
host got it. It leaves what to do here under its request's id
(:func:`mailslot.frontends.mcp.tools.after_answer`), and the wire runs it once the answer with that
id was written into the host's pipe (:mod:`mailslot.frontends.mcp.stdio`'s fast wire) or sent
whole as the answer of an HTTP request (:mod:`mailslot.frontends.http.mcp_sessions`). Only a wire
that says so (:func:`enable`) is handed anything: on the SDK's own stdio path nothing is
recorded (no receipt rather than one before the fact), and nothing piles up.

Request ids are the client's, so one process serving many clients (HTTP) keys them by
the wire session too: :data:`WIRE`, set where that session's tasks start.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextvars import ContextVar

Action = Callable[[], None]

WIRE: ContextVar[str | None] = ContextVar("mailslot_answer_wire", default=None)
"""Which client's wire the tool call being served came on (``None``: the only one)."""

_pending: dict[tuple[str | None, object], list[Action]] = {}
_enabled = False


def enable(on: bool = True) -> None:
    """The wire that runs :func:`sent` for every answer it writes is serving (or ended)."""
    global _enabled
    _enabled = on
    if not on:
        _pending.clear()


def expect(request_id: object, actions: list[Action]) -> None:
    """Run ``actions`` once the answer to ``request_id`` was written."""
    if _enabled and actions and request_id is not None:
        _pending[(WIRE.get(), request_id)] = actions


def taken(message: object) -> list[Action]:
    """The actions waiting for this written wire message (a response), taken out."""
    request_id = getattr(message, "id", None)
    if request_id is None or not _pending or getattr(message, "result", None) is None:
        return []  # not an answer (a request of the server's own has ids too)
    return _pending.pop((None, request_id), [])


def settle(wire: str, asked: Iterable[object], answered: Iterable[object]) -> list[Action]:
    """One HTTP request of ``wire`` is over: the actions of the requests in it that were
    ``answered`` (their answer sent whole), taken out; those of the rest ``asked`` (an
    answer cut off) are dropped, never run."""
    done = set(answered)
    out: list[Action] = []
    for request_id in asked:
        actions = _pending.pop((wire, request_id), [])
        if request_id in done:
            out.extend(actions)
    return out
