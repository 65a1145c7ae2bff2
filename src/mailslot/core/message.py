"""The message: its fields and its file format (YAML frontmatter, then the body).

A message file reads like an e-mail a person can open in any editor::

    ---
    id: 2026-09-21_144808.123456_builder_to_reviewer_initial-handshake_7f3a9c
    date: '2026-09-21T16:48:08.123456+02:00'
    from: builder
    to:
    - reviewer
    subject: Initial handshake
    ---
    Hello.

The header is read by a safe loader. Header values never hold a line break (see
:mod:`mailslot.core.text`), so the first ``---`` line after the opening one always ends the
header. It is written by :func:`_emit_header`, a small emitter that writes only what the
quick reader below reads back exactly (a property test checks the safe loader agrees);
any value it is unsure of goes to PyYAML's safe dumper instead.

This module is on the hook path, which must start in a few milliseconds: it imports
neither ``yaml`` nor ``dataclasses`` nor ``typing`` at load time. Headers in the exact
shape the emitter writes are read by :func:`_quick_header`; anything else (a hand-edited
file, an unusual subject) goes to the YAML loader, which stays the reference.
"""

from __future__ import annotations

from .errors import Unreadable
from .ids import is_id

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal

    import yaml

    State = Literal["unread", "read", "done"]
    Delivery = Literal["inbox", "wake"]
else:
    State = str
    Delivery = str

STATES: tuple[State, ...] = ("unread", "read", "done")
MAX_HEADER_BYTES = 64 * 1024
"""A header longer than this is not mailslot's (a subject is at most 200 characters):
the file is unreadable, found in one bounded read rather than a scan of the whole file."""
_OPEN = b"---\n"
_CLOSE = b"\n---\n"


def max_file_bytes(max_body_bytes: int) -> int:
    """The largest message file a body of at most ``max_body_bytes`` makes (its header
    is found within :data:`MAX_HEADER_BYTES`, its body ends with one newline)."""
    return MAX_HEADER_BYTES + len(_CLOSE) + max_body_bytes + 1


_FIELDS = ("id", "date", "sender", "to", "subject", "body", "re_issue", "in_reply_to",
           "thread", "expect_reply", "delivery", "instance", "notify_when", "cause", "ack")
NOTIFY_RUNGS = ("surfaced", "read", "done")
"""The rungs of the delivery ladder a sender may ask to be told of (``notify_when``)."""


class Message:
    """One delivered message. Immutable: state lives in folders, never in the file.

    A hand-written value class rather than a dataclass: importing ``dataclasses`` costs
    a hook more time than everything else it does.
    """

    __slots__ = (*_FIELDS, "extra")

    id: str
    date: str
    sender: str
    to: tuple[str, ...]
    subject: str
    body: str
    re_issue: str | None
    in_reply_to: str | None
    thread: str | None
    expect_reply: bool
    delivery: Delivery
    instance: str | None
    """The one session of the (single) recipient this message is for
    (``name@session`` addressing); ``None``: any session of the recipient."""
    notify_when: str | None
    """The rung (:data:`NOTIFY_RUNGS`) at which the sender is told, once, that the first
    recipient reached it; ``None``: not asked."""
    cause: str | None
    """The id of the agent mail its sender had just been given when it sent this (set
    by the sender's process: :mod:`mailslot.mail.causes`); ``None``: none, or a reply
    (whose cause is ``in_reply_to``)."""
    ack: bool
    """An acknowledgement that says nothing more: delivered and shown, it wakes nobody."""
    extra: dict[str, Any]
    """Header keys mailslot does not know, kept as read; not part of equality."""

    def __init__(
        self,
        id: str,
        date: str,
        sender: str,
        to: tuple[str, ...],
        subject: str,
        body: str = "",
        re_issue: str | None = None,
        in_reply_to: str | None = None,
        thread: str | None = None,
        expect_reply: bool = False,
        delivery: Delivery = "inbox",
        instance: str | None = None,
        notify_when: str | None = None,
        cause: str | None = None,
        ack: bool = False,
        extra: dict[str, Any] | None = None,
    ) -> None:
        values = (id, date, sender, to, subject, body, re_issue, in_reply_to, thread,
                  expect_reply, delivery, instance, notify_when, cause, ack,
                  {} if extra is None else extra)
        for name, value in zip(self.__slots__, values, strict=True):
            object.__setattr__(self, name, value)

    def _key(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in _FIELDS)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Message):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in _FIELDS)
        return f"Message({inner})"

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Message is immutable (cannot set {name!r})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Message is immutable (cannot delete {name!r})")

    def __reduce__(self) -> tuple[type[Message], tuple[object, ...]]:
        """For ``copy`` and ``pickle``, which would otherwise set the fields one by one."""
        return Message, tuple(getattr(self, name) for name in self.__slots__)

    @property
    def is_broadcast(self) -> bool:
        return self.to == ("all",)

    def shown_to(self, sessions: set[str] | None) -> bool:
        """May a reader that is the sessions ``sessions`` see this message
        (rules in :mod:`mailslot.access.instances`)? ``None``: a reader that is no session (the
        CLI) sees everything; mail for no one instance is every session's."""
        return sessions is None or self.instance is None or self.instance in sessions

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
        if self.instance is not None:
            head["instance"] = self.instance
        if self.notify_when is not None:
            head["notify_when"] = self.notify_when
        if self.cause is not None:
            head["cause"] = self.cause
        if self.ack:
            head["ack"] = True
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

    def replace(self, **changes: Any) -> Message:
        """A copy with some fields changed (what ``dataclasses.replace`` would do)."""
        values: dict[str, Any] = {name: getattr(self, name) for name in self.__slots__}
        unknown = set(changes) - set(values)
        if unknown:
            raise TypeError(f"Message has no field {', '.join(sorted(unknown))}")
        values.update(changes)
        return Message(**values)

    def without_body(self) -> Message:
        return self.replace(body="")


def _yaml() -> tuple[Any, type[yaml.SafeLoader], type[yaml.SafeDumper]]:
    """PyYAML and its fastest safe loader and dumper, loaded on first use (an import
    happens once; ``functools.cache`` would load ``collections`` on the hook path)."""
    import yaml

    loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    dumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml, loader, dumper


def to_bytes(message: Message) -> bytes:
    """The whole file: frontmatter and body, UTF-8."""
    fields = message.header()
    head = _emit_header(fields)
    if head is None:
        yaml, _, dumper = _yaml()
        head = yaml.dump(
            fields,
            Dumper=dumper,
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
    end = data.find(_CLOSE, len(_OPEN) - 1, MAX_HEADER_BYTES)
    if end < 0:
        return None
    return data[len(_OPEN) : end + 1], end + len(_CLOSE)


def from_bytes(data: bytes, *, name: str, header_only: bool = False) -> Message:
    """Parse a message file; ``name`` is only for the error text.

    The closing newline :func:`to_bytes` adds is removed again, so every body
    round-trips exactly.
    """
    head, body = read_frontmatter(data, name=name, header_only=header_only)
    return from_header(head, body, name)


def read_frontmatter(data: bytes, *, name: str, header_only: bool = False
                     ) -> tuple[dict[str, Any], str]:
    """The header of a frontmatter file as a mapping, and its body: the one reader of
    frontmatter, for mailbox files and for files an import brings in alike.

    Bounded: the header is found within :data:`MAX_HEADER_BYTES`. Alias-free: a YAML
    alias (``*name``) is refused, since a few hundred bytes of nested aliases expand to
    gigabytes in anything that walks the result. ``Unreadable`` says why.
    """
    parts = split_header(data)
    if parts is None:
        raise Unreadable(f"{name}: not a message file (no complete '---' header)")
    head_bytes, body_at = parts
    try:
        text = head_bytes.decode("utf-8")
    except UnicodeDecodeError:
        raise Unreadable(f"{name}: unreadable header (UnicodeDecodeError)") from None
    head = _quick_header(text)
    if head is None:
        head = _yaml_header(text, name)
    try:
        body = "" if header_only else data[body_at:].decode("utf-8")
    except UnicodeDecodeError:
        raise Unreadable(f"{name}: body is not UTF-8") from None
    return head, body


def _yaml_header(text: str, name: str) -> dict[str, Any]:
    yaml, loader, _ = _yaml()
    try:
        if "*" in text and any(isinstance(event, yaml.AliasEvent)
                               for event in yaml.parse(text, Loader=loader)):
            raise Hostile(f"{name}: its header holds a YAML alias, which mailslot "
                          "never reads")
        head = yaml.load(text, Loader=loader)
    except RecursionError:
        raise Hostile(f"{name}: its header is nested too deep to read") from None
    except (yaml.YAMLError, ValueError) as exc:
        if "nesting depth" in str(exc):  # libyaml's own bound on the same thing
            raise Hostile(f"{name}: its header is nested too deep to read") from None
        raise Unreadable(f"{name}: unreadable header ({type(exc).__name__})") from None
    if not isinstance(head, dict):
        raise Unreadable(f"{name}: header is not a mapping")
    return head


class Hostile(Unreadable):
    """A header no editor writes: an alias, or nesting past the parser's depth. A
    mailbox skips the file as any unreadable one; an import refuses the source."""


# The quick reader ------------------------------------------------------------------
# It accepts a strict subset of YAML: top-level ``key: value`` lines and ``- item``
# lines under an empty key, each value plain or single-quoted on one line. For every
# input it either returns exactly what the YAML loader would, or None (tests check this
# against the loader with generated headers).
_KEY_CHARS = "abcdefghijklmnopqrstuvwxyz_"  # a line is KEY: VALUE or KEY:, KEY of these
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")
_RESOLVED_FIRST = frozenset("0123456789+.~<=")  # int, float, timestamp, null, merge, value
_WORDS: dict[str, object] = {
    **dict.fromkeys(("yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
    **dict.fromkeys(("no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False),
    **dict.fromkeys(("null", "Null", "NULL"), None),
}
_NO_VALUE = object()


def _scalar(raw: str) -> object:
    """One value as YAML reads it, or ``_NO_VALUE`` when unsure."""
    if raw.startswith("'"):
        inner = raw[1:-1]
        if len(raw) < 2 or not raw.endswith("'") or "'" in inner.replace("''", ""):
            return _NO_VALUE
        return inner.replace("''", "'")
    if raw != raw.strip(" ") or raw[0] in _INDICATORS or raw.endswith(":"):
        return _NO_VALUE
    if ": " in raw or " #" in raw:
        return _NO_VALUE
    if raw[0] in _RESOLVED_FIRST:
        return raw if is_id(raw) else _NO_VALUE
    return _WORDS.get(raw, raw)


def _quick_header(text: str) -> dict[str, Any] | None:
    """The header as the YAML loader would read it, when its shape is the plain one."""
    # Printable text has none of what YAML refuses or reads as a line break or a tab
    # (it is stricter than YAML, which is fine: the loader takes the rest).
    if not text.replace("\n", " ").isprintable():
        return None
    head: dict[str, Any] = {}
    items: list[object] | None = None  # the list being filled, after an empty key
    empty_key: str | None = None
    for line in text.split("\n")[:-1]:
        if line.startswith("- ") and empty_key is not None:
            value = _scalar(line[2:]) if line[2:] else _NO_VALUE
            if value is _NO_VALUE:
                return None
            if items is None:
                items = head[empty_key] = []
            items.append(value)
            continue
        # ``([a-z_]+):(?: (.*))?`` read with str methods: no pattern to compile at every
        # hook's start. A key holds no ``:``, so the first one ends it.
        key, colon, rest = line.partition(":")
        if not colon or not key or key.strip(_KEY_CHARS) or key in head or key in _WORDS:
            return None
        if rest and not rest.startswith(" "):
            return None
        raw = rest[1:] if rest else None
        items, empty_key = None, None
        if raw is None:
            head[key] = None
            empty_key = key
            continue
        if not raw:
            return None
        value = _scalar(raw)
        if value is _NO_VALUE:
            return None
        head[key] = value
    return head or None


# The small emitter --------------------------------------------------------------------
def _emit_header(fields: dict[str, Any]) -> str | None:
    """The header in the quick reader's shape, or ``None`` if a value needs PyYAML.

    Each value is written plain when the quick reader reads that back as the same text,
    else single-quoted when it reads that back, else not at all (``None``): so what is
    written always reads back exactly, and the quick reader agrees with the safe loader.
    """
    lines: list[str] = []
    for key, value in fields.items():
        if value is True:
            lines.append(f"{key}: true")
        elif isinstance(value, str):
            text = _emit_scalar(value)
            if text is None:
                return None
            lines.append(f"{key}: {text}")
        elif isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            lines.append(f"{key}:")
            for item in value:
                text = _emit_scalar(item)
                if text is None:
                    return None
                lines.append(f"- {text}")
        else:
            return None
    return "\n".join(lines) + "\n"


def _emit_scalar(value: str) -> str | None:
    if not value.isprintable():
        return None
    if value and _scalar(value) == value and isinstance(_scalar(value), str):
        return value
    quoted = "'" + value.replace("'", "''") + "'"
    return quoted if _scalar(quoted) == value else None


def from_header(head: dict[str, Any], body: str, name: str) -> Message:
    """A message from a header mapping and its body; ``Unreadable`` if a field is
    missing or of the wrong type (``name`` is for the error text)."""
    def text(key: str, optional: bool = False) -> Any:
        value = head.get(key)
        if value is None and optional:
            return None
        if not isinstance(value, str):
            raise Unreadable(f"{name}: header field {key!r} is missing or not text")
        return value

    to = head.get("to")
    if isinstance(to, str):
        to = [to]
    if not isinstance(to, list) or not to or not all(isinstance(t, str) for t in to):
        raise Unreadable(f"{name}: header field 'to' is missing or not a list of names")
    delivery = head.get("delivery", "inbox")
    if delivery not in ("inbox", "wake"):
        raise Unreadable(f"{name}: header field 'delivery' is {delivery!r}")
    known = {"id", "date", "from", "to", "subject", "re_issue", "in_reply_to", "thread",
             "expect_reply", "delivery", "instance", "notify_when", "cause", "ack"}
    notify_when = head.get("notify_when")
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
        instance=text("instance", optional=True),
        notify_when=notify_when if notify_when in NOTIFY_RUNGS else None,
        cause=text("cause", optional=True),
        ack=head.get("ack") is True,
        extra={k: v for k, v in head.items() if k not in known},
    )
