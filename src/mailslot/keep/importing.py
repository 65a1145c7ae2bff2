"""Import: bring mail from other agent mailboxes into mailslot (``mailslot import``).

Each format is a reader in :mod:`mailslot.keep.importers` that turns a foreign store into
:class:`Foreign` messages (and, where the source has them, agent settings); this module
holds the rules every format shares, so they are kept once:

* **Idempotent.** A foreign message gets a mailslot id derived from its date, sender,
  first recipient and a hash of the format and its key in the source (its own id, or
  its path): importing the same source again finds every id taken and adds nothing.
* **Lossless where the fields map.** Sender, recipients, subject, body, date, thread
  and reply links, and each recipient's state (states only move forward, as migrate).
  A foreign field with no mailslot field is named in the report, once per field (its
  value stays in the source, which an import never changes).
* **Names are made valid, never guessed.** A foreign name is lowercased and every
  character mailslot names cannot hold becomes ``-``; a name that is still not valid
  (or is reserved) is reported and its messages are not imported.
* **Nothing is overwritten**, and nothing is sent: imported mail arrives as it stood in
  the source (read mail stays read), with no wake and no notice. Agent settings a
  source has that mean the same in mailslot go through the config writer
  (:mod:`mailslot.service.config_edit`: checked as ``config set`` checks them), only
  where the config has no setting of that kind for that agent yet.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.dates import UTC, datetime
from ..core.errors import InvalidInput, MailslotError, NotFound
from ..core.message import STATES, Message, State, from_bytes, to_bytes
from ..core.names import BROADCAST_RECIPIENT, is_valid_name
from ..core.text import (
    DEFAULT_MAX_BODY_BYTES,
    MAX_FIELD_LENGTH,
    MAX_SUBJECT_LENGTH,
    clean_body,
    clean_field,
)
from ..mail.posting import receipt
from ..store import Store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..service.mailbox import Mailbox

# Each format and the module under ``importers/`` that reads it (loaded only when used).
_MODULES = {"jsonl": "jsonl", "mbox": "mail_files", "maildir": "mail_files",
            "dead-drop": "folders", "repo-mailbox": "folders",
            "a2a-mailbox": "a2a", "letterbox": "letterbox", "agent-mailbox": "sqlite",
            "mcp-agent-mail": "sqlite"}
FORMATS = tuple(_MODULES)


@dataclass
class Foreign:
    """One message as a reader found it, before mailslot's rules are applied."""

    key: str
    """What names it in the source (its id there, or its path): the import's identity."""
    sender: str
    to: list[str]
    subject: str
    body: str
    date: datetime | str | None = None
    states: dict[str, State] = field(default_factory=dict)
    """Each recipient's state; a recipient not named here is ``unread``."""
    in_reply_to: str | None = None
    """The source key of the message this answers (mapped to its mailslot id)."""
    thread: str | None = None
    """The source key of the thread's first message, if the source has threads."""
    expect_reply: bool = False
    re_issue: str | None = None
    """The issue or ticket it is about, where the source has one."""
    broadcast: bool = False
    retracted: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    """Fields mailslot has none for: named in the report."""
    aliases: list[str] = field(default_factory=list)
    """Other names a reply in the source may use for this message (its file's stem)."""
    mailslot: Message | None = None
    """Set by the jsonl reader: the message exactly as mailslot exported it."""


@dataclass
class Report:
    """What an import added, what it left because it was there, what it could not map."""

    added: Counter[str] = field(default_factory=Counter)
    unmapped: list[str] = field(default_factory=list)
    already: int = 0
    """Messages and broadcasts the mailbox had already (a second import: all of them)."""
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    """The target's limit, which a reader also bounds each file it reads by."""

    def note(self, line: str) -> None:
        if line not in self.unmapped:
            self.unmapped.append(line)

    def as_dict(self) -> dict[str, object]:
        return {"added": dict(+self.added), "already": self.already,
                "unmapped": self.unmapped}

    def summary(self) -> str:
        """What happened, in plain words: ``9 messages imported, 0 already here (...)``."""
        added = self.added
        what = [f"{added['messages']} message{'' if added['messages'] == 1 else 's'}"]
        if added["broadcasts"]:
            what.append(f"{added['broadcasts']} broadcast"
                        f"{'' if added['broadcasts'] == 1 else 's'}")
        details = [f"{added[key]} {label}" for key, label in _DETAILS if added[key]]
        return (f"{' and '.join(what)} imported, {self.already} already here"
                + (f" ({', '.join(details)})" if details else ""))


_DETAILS = (("copies", "copies in mailboxes"),
            ("states", "moved on to read or done"), ("retractions", "retracted"),
            ("seen", "marked seen"), ("config agents", "agents added to the config"),
            ("config settings", "agent settings added to the config"))


class Source:
    """What a reader gives: the messages, and agent settings for the config."""

    def __init__(self, report: Report) -> None:
        self.report = report
        self.agents: dict[str, dict[str, Any]] = {}

    def messages(self) -> Iterator[Foreign]:
        raise NotImplementedError


def import_mail(box: Mailbox, fmt: str, path: str, *,
                max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> Report:
    """Import the ``fmt`` store at ``path`` into ``box``'s store; see the module
    docstring. Settings it takes go through ``box``'s config writer, with its rules.

    All or nothing: everything is read and checked before anything is written, so a
    source that cannot be read whole, or holds a message that cannot be one of
    mailslot's (a body past ``max_body_bytes``, text that is not UTF-8, a field of the
    wrong type, a YAML alias), is one error and the mailbox is left as it was. A file
    that is not a message at all is named in the report and left out (docs/keep.md).
    """
    store = box.store
    report = Report(max_body_bytes=max_body_bytes)
    source = reader(fmt, path, report)
    planned = _plan(fmt, path, source, report)
    store.init()
    for item, message in planned:
        _bring(store, fmt, item, message, report)
    _agents(box, source.agents, report)
    return report


def _plan(fmt: str, path: str, source: Source, report: Report
          ) -> list[tuple[Foreign, Message]]:
    """Every message of the source as it will be written, oldest first (so a reply
    finds the message it answers already mapped), checked as the mailbox checks its own."""
    import sqlite3

    try:
        items = sorted(source.messages(), key=lambda i: parse_date(i.date))
    except (sqlite3.Error, RecursionError, TypeError, ValueError, AttributeError,
            KeyError, IndexError, UnicodeError, OSError) as exc:
        why = str(exc).splitlines()[0][:200] if str(exc) else ""
        raise InvalidInput(f"{path} is not a readable {fmt} source ({type(exc).__name__}"
                           f"{': ' + why if why else ''}); nothing was imported") from None
    ids: dict[str, str] = {}
    planned = []
    for item in items:
        try:
            message = _checked(item.mailslot or _message(fmt, item, ids, report),
                               report.max_body_bytes)
        except (MailslotError, RecursionError, TypeError, ValueError, AttributeError,
                UnicodeError) as exc:
            raise refused(str(item.key), _reason(exc)) from None
        if message is None:
            continue
        ids[item.key] = message.id
        for alias in item.aliases:
            ids.setdefault(alias, message.id)
        planned.append((item, message))
    return planned


def refused(key: str, why: str) -> InvalidInput:
    """The error that stops a whole import: one message of the source cannot be one of
    mailslot's. Nothing is written before every message was checked, so nothing was."""
    return InvalidInput(f"{key[:200]}: {why}; nothing was imported (fix or remove it, "
                        "then import again)")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, MailslotError):
        return str(exc)
    if isinstance(exc, UnicodeError):
        return "text that is not valid UTF-8"
    return f"a field of the wrong type ({type(exc).__name__})"


def _checked(message: Message | None, max_body_bytes: int) -> Message | None:
    """``message`` as the mailbox would store it, or an error saying why it cannot be:
    one-line header values, a body within ``max_body_bytes``, and a file that reads
    back as exactly this message (the reader every mailbox file goes through)."""
    if message is None:
        return None
    changes: dict[str, Any] = {
        "subject": clean_field(message.subject, "subject", MAX_SUBJECT_LENGTH),
        "body": clean_body(message.body, max_body_bytes)}
    for key in ("re_issue", "in_reply_to", "thread"):
        value = getattr(message, key)
        if value is not None:
            changes[key] = clean_field(value, key)
    checked = message.replace(**changes)
    if from_bytes(to_bytes(checked), name=checked.id) != checked:
        raise InvalidInput("it does not read back as it was written")
    return checked


def reader(fmt: str, path: str, report: Report) -> Source:
    """The reader of ``fmt`` over ``path`` (its module is loaded only now)."""
    import importlib

    if fmt not in FORMATS:
        raise InvalidInput(f"unknown format {fmt!r} ({', '.join(FORMATS)})")
    module = importlib.import_module(f"mailslot.keep.importers.{_MODULES[fmt]}")
    source: Source = module.open_source(fmt, path, report)
    return source


def name_of(raw: object, report: Report, role: str = "agent") -> str | None:
    """``raw`` as a mailslot name, or ``None`` (reported) if it cannot be one."""
    text = str(raw or "").strip().lower()
    name = re.sub(r"[^a-z0-9-]+", "-", text).strip("-")[:64]
    if not is_valid_name(name):
        report.note(f"{role} name {str(raw)!r} cannot be a mailslot name; its mail "
                    "was not imported")
        return None
    if name != text:
        report.note(f"{role} name {str(raw)!r} became {name!r}")
    return name


def imported_id(fmt: str, key: str, when: datetime, sender: str, to: list[str]) -> str:
    """The id a foreign message always gets (so a second import finds it taken)."""
    utc = when.astimezone(UTC)
    first = to[0] if len(to) == 1 else f"{to[0]}+{len(to) - 1}"
    tail = hashlib.sha256(f"{fmt}\0{key}".encode()).hexdigest()[:8]
    return f"{utc:%Y-%m-%d_%H%M%S}.{utc.microsecond:06d}_{sender}_to_{first}_{tail}"


def parse_date(raw: datetime | str | float | None) -> datetime:
    """A source's date as an aware datetime (naive ones are taken as UTC); the epoch
    when there is none (the report names the message)."""
    if isinstance(raw, datetime):
        return raw if raw.tzinfo else raw.replace(tzinfo=UTC)
    try:
        if isinstance(raw, int | float) and not isinstance(raw, bool):
            return datetime.fromtimestamp(raw / 1000 if raw > 1e11 else raw, UTC)
        if isinstance(raw, str) and raw:
            found = datetime.fromisoformat(raw.replace("Z", "+00:00"))
            return found if found.tzinfo else found.replace(tzinfo=UTC)
    except (ValueError, OverflowError, OSError):
        pass  # out of range or not a date: as if there were none
    return datetime.fromtimestamp(0, UTC)


def _bring(store: Store, fmt: str, item: Foreign, message: Message,
           report: Report) -> None:
    if message.is_broadcast:
        try:
            _, standing = store.load_broadcast(message.id, header_only=True)
            report.already += 1
        except NotFound:
            store.publish(message)
            report.added["broadcasts"] += 1
            standing = True
        if standing and item.retracted:
            store.retract(message.id)
            report.added["retractions"] += 1
        seen = [a for a in item.states if message.id not in store.seen(a)]
        for agent in seen:
            store.add_seen(agent, [message.id])
            report.added["seen"] += 1
        return
    fresh = False
    for agent in message.to:
        there = store.state_of(agent, message.id)
        if there is None:
            if store.accept_of(agent) != "open":  # the owner brought it in: it passed
                store.add_passed(agent, [message.id])
            store.deliver(message, [agent])
            report.added["copies"] += 1
            fresh, there = True, "unread"
        wanted = item.states.get(agent, "unread")
        if STATES.index(there) < STATES.index(wanted):
            store.move(agent, message.id, wanted)
            report.added["states"] += 1
    if not fresh:
        report.already += 1
    else:
        report.added["messages"] += 1
        receipt(store, lambda: datetime.now(UTC), "imported", message.id,
                agent=message.sender, to=list(message.to), source=fmt)


def _message(fmt: str, item: Foreign, ids: Mapping[str, str], report: Report
             ) -> Message | None:
    sender = name_of(item.sender, report, "sender")
    if item.broadcast:
        to: list[str] = [BROADCAST_RECIPIENT]
    else:
        named = [name_of(r, report, "recipient") for r in item.to]
        to = list(dict.fromkeys(n for n in named if n is not None))
    if sender is None or not to:
        report.note(f"{item.key}: no valid sender or recipient; not imported")
        return None
    states = {}
    for agent, state in item.states.items():
        name = name_of(agent, report, "recipient")
        if name is not None:
            states[name] = state
    item.states = states
    when = parse_date(item.date)
    if item.date is None:
        report.note(f"{item.key}: no date in the source; dated 1970-01-01")
    # Controls become spaces as a sent subject's do; one that is nothing else has none.
    whole = " ".join(re.sub(r"[\x00-\x1f\x7f-\x9f]", " ", str(item.subject or "")).split())
    subject = whole[:MAX_SUBJECT_LENGTH] or "(no subject)"
    if len(whole) > MAX_SUBJECT_LENGTH:
        report.note(f"{item.key}: subject cut to {MAX_SUBJECT_LENGTH} characters "
                    "(the whole is in the body's first line)")
    for key in sorted(item.extra):
        if item.extra[key] not in (None, "", [], {}, False):
            report.note(f"{fmt} field {key!r} has no mailslot field; not imported")
    reply = ids.get(item.in_reply_to) if item.in_reply_to else None
    thread = ids.get(item.thread) if item.thread else None
    if reply and not thread:
        thread = reply
    return Message(id=imported_id(fmt, item.key, when, sender, to), date=when.isoformat(),
                   sender=sender, to=tuple(to), subject=subject, body=item.body.strip("\n"),
                   re_issue=" ".join(item.re_issue.split())[:MAX_FIELD_LENGTH] or None
                   if item.re_issue else None, in_reply_to=reply, thread=thread,
                   expect_reply=item.expect_reply)


def _agents(box: Mailbox, agents: Mapping[str, Mapping[str, Any]], report: Report) -> None:
    """Agents a source describes become entries of config.json's ``agents``, with the
    settings the source has that mean the same in mailslot, through the config writer
    (each agent's entry checked as ``config set`` checks it). Nothing the config has is
    changed: an agent with wake settings already keeps them, and the source's are
    reported instead."""
    from ..service import config_edit

    wanted: dict[str, dict[str, Any]] = {}
    for raw, settings in agents.items():
        name = name_of(raw, report)
        if name is not None:
            wanted[name] = dict(settings)
    for name in sorted(wanted):
        config, version = config_edit.current(box.store)
        known = config.get("agents", {})
        if not isinstance(known, dict):
            raise InvalidInput("config.json: 'agents' is not an object; fix it first")
        entry = known.get(name)
        settings = wanted[name]
        if isinstance(entry, dict) and settings and not _WAKE_KEYS.isdisjoint(entry):
            differ = sorted(k for k, v in settings.items() if entry.get(k) != v)
            if differ:
                report.note(f"agents.{name} has wake settings already: kept (the "
                            f"source's {', '.join(differ)} not taken)")
            continue
        if entry is not None and not isinstance(entry, dict):
            continue  # a malformed entry: doctor names it, nothing is added to it
        new = {**settings, **(entry or {})}
        if new == entry:
            continue
        try:
            config_edit.set_values(box, [(f"agents.{name}", new)], expected=version)
        except InvalidInput as exc:
            report.note(f"agents.{name}: the source's {', '.join(sorted(settings))} not "
                        f"taken ({exc})")
            if entry is not None:
                continue
            new = {}
            config_edit.set_values(box, [(f"agents.{name}", new)])
        report.added["config agents"] += entry is None
        report.added["config settings"] += len(new) - len(entry or {})


_WAKE_KEYS = frozenset({"wake_on_mail", "wake_method"})
