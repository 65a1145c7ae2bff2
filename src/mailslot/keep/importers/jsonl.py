"""mailslot's own export (``mailslot export``, jsonl): every field maps, so an export
imported into another mailbox gives the same messages, ids and states. The mbox and
Maildir exports carry the same fields in their headers (:mod:`.mail_files`), read into
the same row and checked here (:func:`exported`)."""

from __future__ import annotations

import json
from collections.abc import Iterator

from ...core.errors import InvalidInput, MailslotError
from ...core.message import STATES, Message, State, from_header
from ...core.names import BROADCAST_RECIPIENT
from ..importing import Foreign, Report, Source, refused


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
            except RecursionError:
                raise refused(f"line {number}", "nested too deep to read") from None
            except ValueError as exc:
                self.report.note(f"line {number}: not JSON ({exc}); not imported")
                continue
            yield exported(row, f"line {number}")


def exported(row: object, where: str) -> Foreign:
    """One exported message (a jsonl line's object, or an e-mail's headers as one) as
    the message it was, with each recipient's state; :func:`refused` if it is not."""
    try:
        message, states = _message(row)
    except RecursionError:
        raise refused(where, "nested too deep to read") from None
    except MailslotError as exc:
        raise refused(where, str(exc)) from None
    assert isinstance(row, dict)  # checked by _message
    return Foreign(key=message.id, sender=message.sender, to=list(message.to),
                   subject=message.subject, body=message.body, states=states,
                   broadcast=message.is_broadcast, retracted=row.get("retracted") is True,
                   mailslot=message)


def _message(row: object) -> tuple[Message, dict[str, State]]:
    """One export line as the message it was, checked as a mailbox file's header is
    (the same reader), and each recipient's state. mailslot's own notices (from
    ``mailslot``) are mail like any other here: an export holds them."""
    from ...core.ids import check_id
    from ...core.names import SYSTEM_SENDER, check_name

    if not isinstance(row, dict):
        raise InvalidInput("not a JSON object")
    head = {key: row[key] for key in _HEADER if row.get(key) is not None}
    if not isinstance(row.get("body") or "", str):
        raise InvalidInput("'body' is not text")
    body = row.get("body") or ""
    message = from_header(head, body + "\n", "this line")  # the reader takes one "\n" off
    sender = message.sender if message.sender == SYSTEM_SENDER \
        else check_name(message.sender, "from")
    to = tuple(BROADCAST_RECIPIENT if t == BROADCAST_RECIPIENT else check_name(t, "to")
               for t in message.to)
    for key in ("in_reply_to", "thread"):
        if getattr(message, key) is not None:
            check_id(getattr(message, key))
    found = row.get("states") or {}
    if not isinstance(found, dict):
        raise InvalidInput("'states' is not an object")
    states: dict[str, State] = {check_name(a, "states"): s
                                for a, s in found.items() if s in STATES}
    return message.replace(id=check_id(message.id), sender=sender, to=to,
                           extra={}), states


_HEADER = ("id", "date", "from", "to", "subject", "re_issue", "in_reply_to", "thread",
           "expect_reply", "delivery", "instance", "notify_when")
