"""What is recorded once an answer left on the MCP wire: the delivery ladder's
``surfaced`` receipt of a tool result that carried mail.

A tool runs before its result is serialised and written, so it cannot record that the
host got it. It leaves what to do here under its request's id
(:func:`mailslot.mcp.tools.after_answer`), and the wire runs it once the answer with that
id was written into the host's pipe (:mod:`mailslot.mcp.stdio`'s fast wire). Only a wire
that says so (:func:`enable`) is handed anything: on the SDK's own stdio path and over
HTTP nothing is recorded (no receipt rather than one before the fact), and nothing
piles up.
"""

from __future__ import annotations

from collections.abc import Callable

Action = Callable[[], None]

_pending: dict[object, list[Action]] = {}
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
        _pending[request_id] = actions


def taken(message: object) -> list[Action]:
    """The actions waiting for this written wire message (a response), taken out."""
    request_id = getattr(message, "id", None)
    if request_id is None or not _pending or getattr(message, "result", None) is None:
        return []  # not an answer (a request of the server's own has ids too)
    return _pending.pop(request_id, [])
