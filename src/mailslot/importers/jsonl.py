"""mailslot's own export (``mailslot export``, jsonl): every field maps, so an export
imported into another mailbox gives the same messages, ids and states."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ..errors import InvalidInput, MailslotError
from ..importing import Foreign, Report, Source
from ..message import STATES, Delivery, Message
from ..names import BROADCAST_RECIPIENT


def open_source(fmt: str, path: str, report: Report) -> Source:
    return Lines(path, report)


class Lines(Source):
    def __init__(self, path: str, report: Report) -> None:
        super().__init__(report)
        try:
            with open(path, encoding="utf-8") as file:
                self.lines = file.read().splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"cannot read {path}: {exc}") from None

    def messages(self) -> Iterator[Foreign]:
        for number, line in enumerate(self.lines, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                message = _message(row)
            except (ValueError, KeyError, TypeError, MailslotError) as exc:
                self.report.note(f"line {number}: not a mailslot export line ({exc}); "
                                 "not imported")
                continue
            states = {str(a): s for a, s in (row.get("states") or {}).items() if s in STATES}
            yield Foreign(key=message.id, sender=message.sender, to=list(message.to),
                          subject=message.subject, body=message.body, states=states,
                          broadcast=message.is_broadcast,
                          retracted=bool(row.get("retracted")), mailslot=message)


def _message(row: dict[str, Any]) -> Message:
    from ..ids import check_id
    from ..names import check_name

    to = tuple(BROADCAST_RECIPIENT if t == BROADCAST_RECIPIENT else check_name(t, "to")
               for t in row["to"])
    delivery: Delivery = "wake" if row.get("delivery") == "wake" else "inbox"
    return Message(id=check_id(row["id"]), date=str(row["date"]),
                   sender=check_name(row["from"], "from"), to=to,
                   subject=str(row["subject"]), body=str(row.get("body") or ""),
                   re_issue=_text(row, "re_issue"), in_reply_to=_text(row, "in_reply_to"),
                   thread=_text(row, "thread"), expect_reply=bool(row.get("expect_reply")),
                   delivery=delivery)


def _text(row: dict[str, Any], key: str) -> str | None:
    """An optional text field, as given: a number (``re_issue: 42``) is refused, never
    written into a message file, where no reader would take it."""
    from ..text import kind_of

    value = row.get(key)
    if value is not None and not isinstance(value, str):
        raise InvalidInput(f"{key} must be text (a JSON string), not {kind_of(value)}")
    return value
