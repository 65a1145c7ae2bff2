"""mailslot's own mbox and Maildir exports (``mailslot export --format mbox|maildir``).

Each message carries every mailslot field in its headers (``X-Mailslot-Id``,
``X-Mailslot-Date``, ``X-Mailslot-State``, ...; docs/keep.md), so it is read into the
row a jsonl line would be and checked as one (:func:`.jsonl.exported`): an export
imported into another mailbox gives the same messages, ids and states, and importing it
twice adds nothing. A message without ``X-Mailslot-Id`` (mail another program wrote) is
named in the report and left out.

An mbox is split at each line starting ``From ``, and the blank line that ends each
message belongs to the file, not the message (:mod:`mailbox` writes one after every
message, the last too); a Maildir's messages
are the files of ``cur/`` and ``new/``. Every message is read within a bound (twice the
largest message file, for the base64 or quoted-printable a body may be written in),
without following a link.
"""

from __future__ import annotations

import email
import email.policy
import os
from collections.abc import Iterator
from email.message import EmailMessage
from typing import Any

from ...core.errors import InvalidInput
from ...core.message import max_file_bytes
from ..importing import Foreign, Report, Source, refused
from .jsonl import exported
from .message_files import read_source

_ENCODED = 2
"""A message as e-mail is at most this many times its file (base64 takes 4/3)."""
_FIELDS = {"X-Mailslot-Id": "id", "X-Mailslot-Date": "date", "Subject": "subject",
           "X-Mailslot-Re-Issue": "re_issue", "X-Mailslot-In-Reply-To": "in_reply_to",
           "X-Mailslot-Thread": "thread", "X-Mailslot-Delivery": "delivery",
           "X-Mailslot-Instance": "instance", "X-Mailslot-Notify-When": "notify_when"}


def open_source(fmt: str, path: str, report: Report) -> Source:
    if fmt == "maildir" and not os.path.isdir(os.path.join(path, "cur")):
        raise InvalidInput(f"{path} is not a Maildir folder (no cur/ in it)")
    if fmt == "mbox" and not os.path.isfile(path):
        raise InvalidInput(f"{path} is not an mbox file")
    return MailFiles(fmt, path, report)


class MailFiles(Source):
    def __init__(self, fmt: str, path: str, report: Report) -> None:
        super().__init__(report)
        self.fmt, self.path = fmt, path
        self.limit = _ENCODED * max_file_bytes(report.max_body_bytes)

    def messages(self) -> Iterator[Foreign]:
        found = self._maildir() if self.fmt == "maildir" else (
            (f"message {n}", raw) for n, raw in enumerate(_split(self.path, self.limit), 1))
        for shown, raw in found:
            item = None if raw is None else _item(raw, shown, self.report)
            if item is not None:
                yield item

    def _maildir(self) -> Iterator[tuple[str, bytes | None]]:
        """Each file of ``new/`` and ``cur/``, read within the bound."""
        for sub in ("new", "cur"):
            folder = os.path.join(self.path, sub)
            for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
                shown = f"{sub}/{name}"
                yield shown, read_source(os.path.join(folder, name), self.report, shown,
                                         self.limit)


def _split(path: str, limit: int) -> Iterator[bytes]:
    """Each message of the mbox at ``path``, without its ``From `` line."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as file:
        lines: list[bytes] | None = None
        size = 0
        while line := file.readline(limit + 1):
            if line.startswith(b"From "):
                if lines is not None:
                    yield _without_blank_end(lines)
                lines, size = [], 0
                continue
            size += len(line)
            if lines is None or size > limit:
                why = "is not an mbox (it does not start with a 'From ' line)" \
                    if lines is None else f"holds a message past {limit} bytes"
                raise InvalidInput(f"{path} {why}; nothing was imported")
            lines.append(line)
        if lines is not None:
            yield _without_blank_end(lines)


def _without_blank_end(lines: list[bytes]) -> bytes:
    """A message without the blank line that ends it in the mbox."""
    if lines and lines[-1] in (b"\n", b"\r\n"):
        lines = lines[:-1]
    return b"".join(lines)


def _item(raw: bytes, shown: str, report: Report) -> Foreign | None:
    mail = email.message_from_bytes(raw, policy=email.policy.default)
    assert isinstance(mail, EmailMessage)  # the default policy's class
    if mail.get("X-Mailslot-Id") is None:
        report.note(f"{shown}: no X-Mailslot-Id (not a mailslot export's message); "
                    "not imported")
        return None
    try:
        row = _row(mail)
    except (LookupError, ValueError, TypeError, AttributeError) as exc:
        raise refused(shown, f"its headers do not read as an export's "
                             f"({type(exc).__name__})") from None
    return exported(row, shown)


def _row(mail: EmailMessage) -> dict[str, Any]:
    """The message's fields as a jsonl line holds them."""
    row: dict[str, Any] = {key: str(mail[header]) for header, key in _FIELDS.items()
                           if mail[header] is not None}
    row["from"] = _names(mail, "From")[0]
    row["to"] = _names(mail, "To")
    row["expect_reply"] = str(mail.get("X-Mailslot-Expect-Reply", "")) == "true"
    row["retracted"] = str(mail.get("X-Mailslot-Retracted", "")) == "true"
    states = str(mail.get("X-Mailslot-State", ""))
    row["states"] = dict(pair.strip().split("=", 1) for pair in states.split(",")
                         if pair.strip())
    body = mail.get_content()
    if not isinstance(body, str):
        raise TypeError("a body that is not text")
    row["body"] = body[:-1] if body.endswith("\n") else body
    return row


def _names(mail: EmailMessage, header: str) -> list[str]:
    """The names of a header's addresses (``NAME@mailslot.invalid``: ``NAME``)."""
    field = mail[header]
    names = [a.username for a in field.addresses] if field is not None else []
    if not names:
        raise ValueError(f"no {header}")
    return names
