"""The small JSON API of ``serve --http``: remote hooks and the remote everyday commands.

Behind the same door as ``/mcp`` (:mod:`mailslot.frontends.http.guard`), so the caller is always
the credential's agent. Each route is one service call; the answers are the shapes the
CLI prints with ``--json``. A hook on a machine without the store asks ``GET pending``
for what to inject, prints it, and only then ``POST seen`` records it, so a hook that
dies in between shows the mail again (redelivery, never loss), exactly as a local hook.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

import anyio

from ...core.errors import InvalidInput, MailslotError
from ...core.ids import check_id
from ...core.names import session_key
from ...service.delivery import MOMENTS, START, Delivery, Injection
from ...service.mailbox import Mailbox
from .guard import BodyTooLarge, answer, read_body
from .wire import API, error_body

Route = Callable[[Mailbox, dict[str, Any]], Any]


def _pending(box: Mailbox, q: dict[str, Any]) -> dict[str, Any]:
    moment, session = _moment(q), q.get("session") or None
    delivery = _delivery(box)
    planned = delivery.plan(moment, session, limit=_int(q, "limit", 10_000),
                            stop_active=_flag(q, "stop_active"))
    if session:  # a remote hook's host session is a session of its agent too
        host = q.get("host")
        delivery.ran(str(session), lambda: {"host": str(host) if host else None,
                                            "remote": True, "started": time.time()},
                     fresh=moment == START)
    if planned is None:
        return {"text": None, "moment": moment, "session": None, "shown": [],
                "broadcasts": [], "told": []}
    return {"text": planned.text, "moment": moment, "session": planned.session,
            "shown": planned.shown, "broadcasts": planned.broadcasts,
            "told": planned.told}


def _seen(box: Mailbox, q: dict[str, Any]) -> dict[str, Any]:
    moment, session = _moment(q), q.get("session")
    shown, broadcasts = _ids(q, "shown"), _ids(q, "broadcasts")
    told = _ids(q, "told")  # counted in the line of what did not fit
    if not set(broadcasts) <= set(shown):
        raise InvalidInput("broadcasts must be among the shown ids")
    key = session_key(str(session)) if session else None
    host = q.get("host")
    _delivery(box).commit(Injection("", moment, key, shown, broadcasts, told),
                          host=host if isinstance(host, str) else "remote",
                          taken=q.get("taken") is not False)
    return {"recorded": len(shown)}


def _send(box: Mailbox, q: dict[str, Any]) -> dict[str, Any]:
    box.refuse_claimed_sender("send", q)
    message = box.send(_names(q, "to"), _text(q, "subject"), _text(q, "body"),
                       re_issue=_optional_text(q, "re_issue"),
                       expect_reply=_flag(q, "expect_reply"),
                       wake=_flag(q, "wake"), new=_flag(q, "new"),
                       notify_when=_optional_text(q, "notify_when"), ack=_flag(q, "ack"))
    return {"message": message.as_dict(), "notes": box.notes}


def _inbox(box: Mailbox, q: dict[str, Any]) -> dict[str, Any]:
    page = box.page(q.get("for") or None, include_done=_flag(q, "all"),
                    unread_only=_flag(q, "unread"), limit=_int(q, "limit", 20),
                    number=_int(q, "page", 1), before=q.get("before") or None)
    return {"items": [i.as_dict() for i in page.items], "more": page.more,
            "done_hidden": page.done_hidden, "unreadable": page.items.unreadable}


def _read(box: Mailbox, q: dict[str, Any]) -> dict[str, Any]:
    return box.read(_text(q, "id"), mark=not _flag(q, "peek")).as_dict(with_body=True)


def _done(box: Mailbox, q: dict[str, Any]) -> dict[str, Any]:
    items = box.done(_texts(q, "ids"), everything=_flag(q, "all"))
    return {"items": [i.as_dict() for i in items], "missing": items.missing,
            "missing_text": items.missing_text() if items.missing else None}


def _reply(box: Mailbox, q: dict[str, Any]) -> dict[str, Any]:
    box.refuse_claimed_sender("reply", q)
    return box.reply(_text(q, "id"), _text(q, "body"), subject=_optional_text(q, "subject"),
                     ack=_flag(q, "ack")).as_dict()


ROUTES: dict[tuple[str, str], Route] = {
    ("GET", "pending"): _pending, ("POST", "seen"): _seen, ("POST", "send"): _send,
    ("GET", "inbox"): _inbox, ("POST", "read"): _read, ("POST", "done"): _done,
    ("POST", "reply"): _reply,
}


async def serve_api(scope: dict[str, Any], receive: Any, send: Any,
                    open_box: Callable[[], Mailbox], max_body_bytes: int) -> None:
    """Answer one ``/api/NAME`` request (the door has admitted it)."""
    route = ROUTES.get((scope["method"], scope["path"].removeprefix(API)))
    if route is None:
        return await answer(send, 404, {"error": "no such route"})
    try:
        if scope["method"] == "GET":
            query = {k: v[-1] for k, v in parse_qs(scope["query_string"].decode()).items()}
        else:
            query = _object(await read_body(receive, max_body_bytes))
        result = await anyio.to_thread.run_sync(lambda: route(open_box(), query))
    except BodyTooLarge as exc:
        return await answer(send, 413, {"error": str(exc), "kind": "invalid"})
    except MailslotError as exc:
        status, body = error_body(exc)
        return await answer(send, status, body)
    await answer(send, 200, result)


def _object(raw: bytes) -> dict[str, Any]:
    try:
        value = json.loads(raw or b"{}")
    except ValueError:
        raise InvalidInput("the request body is not JSON") from None
    if not isinstance(value, dict):
        raise InvalidInput("the request body must be a JSON object")
    return value


def _delivery(box: Mailbox) -> Delivery:
    identity = box.identity
    assert identity is not None  # the door only opens bound mailboxes
    return Delivery(box.store, box.agent, identity)


def _moment(q: dict[str, Any]) -> str:
    moment = q.get("moment")
    if moment not in MOMENTS:
        raise InvalidInput(f"moment must be one of {', '.join(MOMENTS)}")
    return str(moment)


def _ids(q: dict[str, Any], key: str) -> list[str]:
    value = q.get(key) or []
    if not isinstance(value, list):
        raise InvalidInput(f"{key} must be a list of ids")
    return [check_id(str(i)) for i in value]


def _text(q: dict[str, Any], key: str) -> str:
    """A string field ("" when absent or null)."""
    value = _optional_text(q, key)
    return "" if value is None else value


def _optional_text(q: dict[str, Any], key: str) -> str | None:
    """A string field or None: any other JSON type is refused, never stored as its
    Python spelling."""
    value = q.get(key)
    if value is not None and not isinstance(value, str):
        raise InvalidInput(f"{key} must be a string")
    return value


def _texts(q: dict[str, Any], key: str) -> list[str]:
    """A list of strings (absent or null: none); a bare string is refused, not taken
    letter by letter."""
    value = q.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidInput(f"{key} must be a list of strings")
    return value


def _names(q: dict[str, Any], key: str) -> str | list[str]:
    """Recipients: one name, or a list of names."""
    value = q.get(key)
    if isinstance(value, str):
        return value
    if value is not None and not isinstance(value, list):
        raise InvalidInput(f"{key} must be a name or a list of names")
    return _texts(q, key)


def _flag(q: dict[str, Any], key: str) -> bool:
    value = q.get(key, False)
    return value is True or value in ("1", "true")


def _int(q: dict[str, Any], key: str, default: int) -> int:
    value = q.get(key, default)
    try:
        return int(value)
    except (TypeError, ValueError):
        raise InvalidInput(f"{key} must be a whole number") from None
