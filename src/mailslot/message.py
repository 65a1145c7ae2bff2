"""The message: its fields and its file format (YAML frontmatter, then the body).

A message file reads like an e-mail a person can open in any editor::

    ---
    id: 2026-09-21_144808.123456_claude_to_gemini_initial-handshake_7f3a9c
    date: '2026-09-21T16:48:08.123456+02:00'
    from: claude
    to:
    - gemini
    subject: Initial handshake
    ---
    Hello.

The header is written by a YAML emitter and read by a safe loader. Header values never
hold a line break (see :mod:`mailslot.text`), so the first ``---`` line after the opening
one always ends the header.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

import yaml

from .errors import StoreError

State = Literal["unread", "read", "done"]
STATES: tuple[State, ...] = ("unread", "read", "done")
Delivery = Literal["inbox", "wake"]

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_OPEN = b"---\n"
_CLOSE = b"\n---\n"


@dataclass(frozen=True)
class Message:
    """One delivered message. Immutable: state lives in folders, never in the file."""

    id: str
    date: str
    sender: str
    to: tuple[str, ...]
    subject: str
    body: str = ""
    re_issue: str | None = None
    in_reply_to: str | None = None
    thread: str | None = None
    expect_reply: bool = False
    delivery: Delivery = "inbox"
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def is_broadcast(self) -> bool:
        return self.to == ("all",)

    def header(self) -> dict[str, Any]:
        """The frontmatter fields in file order; optional ones only when set."""
        head: dict[str, Any] = {
            "id": self.id,
            "date": self.date,
            "from": self.sender,
            "to": list(self.to),
            "subject": self.subject,
        }
        for key in ("re_issue", "in_reply_to", "thread"):
            value = getattr(self, key)
            if value is not None:
                head[key] = value
        if self.expect_reply:
            head["expect_reply"] = True
        if self.delivery != "inbox":
            head["delivery"] = self.delivery
        return head

    def as_dict(self, *, with_body: bool = True) -> dict[str, Any]:
        """The JSON shape front ends print: every field, ``None`` where unset."""
        data = self.header()
        for key in ("re_issue", "in_reply_to", "thread"):
            data.setdefault(key, None)
        data["expect_reply"] = self.expect_reply
        data["delivery"] = self.delivery
        if with_body:
            data["body"] = self.body
        return data

    def without_body(self) -> Message:
        return replace(self, body="")


def to_bytes(message: Message) -> bytes:
    """The whole file: frontmatter and body, UTF-8."""
    head = yaml.dump(
        message.header(),
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=1_000_000,
    )
    # A non-empty body always gets one closing newline, which the reader removes again.
    body = message.body + "\n" if message.body else ""
    return b"".join((_OPEN, head.encode("utf-8"), b"---\n", body.encode("utf-8")))


def split_header(data: bytes) -> tuple[bytes, int] | None:
    """The header bytes and the body's offset, or ``None`` if the header is not complete."""
    if not data.startswith(_OPEN):
        return None
    end = data.find(_CLOSE, len(_OPEN) - 1)
    if end < 0:
        return None
    return data[len(_OPEN) : end + 1], end + len(_CLOSE)


def from_bytes(data: bytes, *, name: str, header_only: bool = False) -> Message:
    """Parse a message file; ``name`` is only for the error text.

    The closing newline :func:`to_bytes` adds is removed again, so every body
    round-trips exactly.
    """
    parts = split_header(data)
    if parts is None:
        raise StoreError(f"{name}: not a message file (no complete '---' header)")
    head_bytes, body_at = parts
    try:
        head = yaml.load(head_bytes.decode("utf-8"), Loader=_Loader)
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise StoreError(f"{name}: unreadable header ({type(exc).__name__})") from None
    if not isinstance(head, dict):
        raise StoreError(f"{name}: header is not a mapping")
    try:
        body = "" if header_only else data[body_at:].decode("utf-8")
    except UnicodeDecodeError:
        raise StoreError(f"{name}: body is not UTF-8") from None
    return _from_header(head, body, name)


def _from_header(head: dict[str, Any], body: str, name: str) -> Message:
    def text(key: str, optional: bool = False) -> Any:
        value = head.get(key)
        if value is None and optional:
            return None
        if not isinstance(value, str):
            raise StoreError(f"{name}: header field {key!r} is missing or not text")
        return value

    to = head.get("to")
    if isinstance(to, str):
        to = [to]
    if not isinstance(to, list) or not to or not all(isinstance(t, str) for t in to):
        raise StoreError(f"{name}: header field 'to' is missing or not a list of names")
    delivery = head.get("delivery", "inbox")
    if delivery not in ("inbox", "wake"):
        raise StoreError(f"{name}: header field 'delivery' is {delivery!r}")
    known = {"id", "date", "from", "to", "subject", "re_issue", "in_reply_to", "thread",
             "expect_reply", "delivery"}
    return Message(
        id=text("id"),
        date=text("date"),
        sender=text("from"),
        to=tuple(to),
        subject=text("subject"),
        body=body[:-1] if body.endswith("\n") else body,
        re_issue=text("re_issue", optional=True),
        in_reply_to=text("in_reply_to", optional=True),
        thread=text("thread", optional=True),
        expect_reply=head.get("expect_reply") is True,
        delivery=delivery,
        extra={k: v for k, v in head.items() if k not in known},
    )
