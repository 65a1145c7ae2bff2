"""What the service returns: plain values front ends print or turn into JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .message import Message, State
from .presence import Session


@dataclass(frozen=True)
class Item:
    """A message as one mailbox holds it: the message, its state there, and whose it is."""

    message: Message
    state: State
    mailbox: str
    short: str = ""  # a shorter id that names it uniquely (see shortids), where known

    @property
    def shown_id(self) -> str:
        return self.short or self.message.id

    def as_dict(self, *, with_body: bool = False) -> dict[str, Any]:
        data = self.message.as_dict(with_body=with_body)
        data["state"] = self.state
        data["mailbox"] = self.mailbox
        data["short"] = self.shown_id
        return data


@dataclass(frozen=True)
class InboxPage:
    """One page of a listing, how many come after it, and (for an empty page) how many
    done messages the listing left out."""

    items: list[Item]
    more: int = 0
    done_hidden: int = 0


@dataclass(frozen=True)
class RecipientStatus:
    agent: str
    state: State | None  # None: the copy is gone (or was never delivered)
    read_at: str | None = None
    done_at: str | None = None


@dataclass(frozen=True)
class Status:
    """Where a sent message stands with each recipient, and what answered it."""

    message: Message
    recipients: list[RecipientStatus]
    replies: list[str]
    retracted: bool = False
    short: str = ""  # a shorter id that names it uniquely, where known

    def as_dict(self) -> dict[str, Any]:
        data = self.message.as_dict(with_body=False)
        if self.short:
            data["short"] = self.short
        data["retracted"] = self.retracted
        data["recipients"] = [r.__dict__ for r in self.recipients]
        data["replies"] = self.replies
        return data


@dataclass(frozen=True)
class AgentInfo:
    name: str
    unread: int
    known_from: list[str] = field(default_factory=list)
    online: bool = False  # a server of this agent is running now (see presence.py)
    last_seen: str | None = None  # when a server of this agent last showed life
    sessions: list[Session] = field(default_factory=list)  # its servers online now
    wake: str = "off"  # how its config lets it be woken (see wake_setting)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "unread": self.unread, "known_from": self.known_from,
                "online": self.online, "last_seen": self.last_seen,
                "sessions": [s.as_dict() for s in self.sessions], "wake": self.wake}


@dataclass(frozen=True)
class WhoAmI:
    """The identity in use, where it came from, and which mailbox it speaks in."""

    name: str | None  # None: no usable identity (``problem`` says why)
    source: str | None  # "--agent", "MAILSLOT_AGENT", "git"
    git_toplevel: str | None
    mailbox: str
    store: str
    problem: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class DoctorReport:
    location: str
    problems: list[str]
    fixed: list[str]

    @property
    def healthy(self) -> bool:
        return not self.problems
