"""What the folder formats share: one message file (Markdown with YAML frontmatter, or
JSON) read into a :class:`~mailslot.keep.importing.Foreign`, and a settings file's agents."""

from __future__ import annotations

import json
import os
from typing import Any

from ...core.errors import InvalidInput, Unreadable
from ...core.message import Hostile, State, max_file_bytes, read_frontmatter
from ..importing import Foreign, Report, refused

_SENDER = ("from", "sender", "from_agent", "author")
_TO = ("to", "recipient", "recipients", "to_agent")
_DATE = ("date", "timestamp", "sent", "sent_at", "created_at", "time")
_REPLY = ("in_reply_to", "reply_to", "in-reply-to", "parent")
_THREAD = ("thread", "thread_id", "conversation")
_KNOWN = {*_SENDER, *_TO, *_DATE, *_REPLY, *_THREAD, "id", "subject", "title", "body",
          "re_issue",
          "text", "message", "content", "status", "state", "read", "done", "acked"}


def subject_of(body: str) -> str:
    """A subject for a source that has none: the first non-empty line, cut to 80."""
    for line in body.splitlines():
        if line.strip():
            text = line.strip()
            return text if len(text) <= 80 else text[:79] + "…"
    return "(no subject)"


def read_source(path: str, report: Report, shown: str, limit: int | None = None
                ) -> bytes | None:
    """A source file's bytes, read without following a link and never much past what a
    message may hold (or ``limit``); ``None`` (reported) if it cannot be read, and
    refused if it is larger."""
    limit = limit or max_file_bytes(report.max_body_bytes)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as file:
            data = file.read(limit + 1)
    except OSError as exc:
        report.note(f"{shown}: unreadable ({exc.strerror or exc}); not imported")
        return None
    if len(data) > limit:
        raise refused(shown, f"larger than a message may be (max_body_bytes is "
                             f"{report.max_body_bytes})")
    return data


def read_mail(path: str, report: Report, shown: str) -> dict[str, Any] | None:
    """The fields of one message file, the body under ``body``; ``None`` (reported) if
    it cannot be read as one."""
    data = read_source(path, report, shown)
    if data is None:
        return None
    if path.endswith(".json"):
        try:
            found = json.loads(data)
        except RecursionError:
            raise refused(shown, "nested too deep to read") from None
        except ValueError as exc:
            report.note(f"{shown}: not JSON ({type(exc).__name__}); not imported")
            return None
        return found if isinstance(found, dict) else None
    return frontmatter(data, report, shown)


def frontmatter(data: bytes, report: Report, shown: str) -> dict[str, Any] | None:
    """A Markdown file's YAML frontmatter and body, read by the mailbox's own bounded,
    alias-free reader (:func:`mailslot.core.message.read_frontmatter`)."""
    data = data.replace(b"\r\n", b"\n")
    data += b"" if data.endswith(b"\n") else b"\n"  # a closing '---' at the very end
    if not data.startswith(b"---"):
        try:
            return {"body": data.decode("utf-8")}
        except UnicodeDecodeError:
            report.note(f"{shown}: not UTF-8; not imported")
            return None
    try:
        head, body = read_frontmatter(data, name=shown)
    except Hostile as exc:
        raise InvalidInput(f"{exc}: nothing was imported") from None
    except Unreadable as exc:
        report.note(f"{exc}; not imported")
        return None
    fields = {str(k).lower(): v for k, v in head.items()}
    fields["body"] = body[1:] if body.startswith("\n") else body
    return fields


def first(fields: dict[str, Any], names: tuple[str, ...]) -> Any:
    for name in names:
        if fields.get(name) not in (None, ""):
            return fields[name]
    return None


def foreign(fmt: str, key: str, fields: dict[str, Any], *, owner: str | None,
            state: State | None) -> Foreign:
    """A :class:`Foreign` from a file's fields; ``owner`` is the mailbox it was in (the
    recipient when the file names none), ``state`` that recipient's state."""
    to = first(fields, _TO)
    recipients = [str(t) for t in (to if isinstance(to, list) else
                                   str(to).replace(";", ",").split(",") if to else [])]
    recipients = [r.strip() for r in recipients if r.strip()] or ([owner] if owner else [])
    body = str(first(fields, ("body", "text", "message", "content")) or "")
    subject = first(fields, ("subject", "title"))
    date = first(fields, _DATE)
    states: dict[str, State] = {}
    if owner and state:
        states[owner] = state
    return Foreign(key=key, sender=str(first(fields, _SENDER) or ""), to=recipients,
                   subject=str(subject) if subject else subject_of(body), body=body,
                   date=date.isoformat() if hasattr(date, "isoformat") else date,
                   states=states, in_reply_to=_text(first(fields, _REPLY)),
                   thread=_text(first(fields, _THREAD)), re_issue=_text(fields.get("re_issue")),
                   extra={k: v for k, v in fields.items() if k not in _KNOWN})


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def state_of(fields: dict[str, Any], default: State) -> State:
    """A state from the fields a file may carry (``status``, ``read``, ``done``)."""
    status = str(first(fields, ("status", "state")) or "").lower()
    if status in ("done", "archived", "acked", "handled", "closed") or fields.get("done") \
            or fields.get("acked"):
        return "done"
    if status in ("read", "seen", "opened") or fields.get("read") is True:
        return "read" if default == "unread" else default
    return default


def settings_file(path: str, report: Report, shown: str) -> object:
    """A source's JSON settings file, parsed; ``None`` when there is none, or (reported)
    when it cannot be read."""
    try:
        with open(path, encoding="utf-8") as file:
            return json.load(file)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        report.note(f"{shown}: unreadable ({exc}); no agents taken from it")
        return None


def agents_of(path: str, report: Report, shown: str) -> dict[str, dict[str, Any]]:
    """The agents a JSON settings file names (an object keyed by name, a list of names
    or of objects with ``name``, under ``agents`` or at the top). Only the names become
    config entries: a foreign setting never becomes one of mailslot's (a wake command
    from another tool's file would run), so the others are reported."""
    data = settings_file(path, report, shown)
    found = data.get("agents", data) if isinstance(data, dict) else data
    names: list[str] = []
    if isinstance(found, dict):
        names = [str(k) for k in found]
        settings = sorted({str(k) for v in found.values() if isinstance(v, dict) for k in v})
    elif isinstance(found, list):
        names = [str(a.get("name")) if isinstance(a, dict) else str(a) for a in found]
        settings = sorted({str(k) for a in found if isinstance(a, dict) for k in a} - {"name"})
    else:
        settings = []
    if settings:
        report.note(f"{shown}: agent settings {', '.join(settings)} are not mailslot "
                    "settings; only the names became config entries")
    return {name: {} for name in names if name and name != "None"}


def listing(folder: str) -> list[str]:
    """Message files in ``folder`` (Markdown or JSON, not hidden), sorted; none when it
    is not a folder."""
    if not os.path.isdir(folder) or os.path.islink(folder):
        return []
    return sorted(n for n in os.listdir(folder) if n.endswith((".md", ".json"))
                  and not n.startswith(".") and os.path.isfile(os.path.join(folder, n)))
