"""Export: every message with its per-recipient state, as JSON lines, mbox or Maildir.

Read through the :class:`~mailslot.store.Store` protocol only, so it works on any
backend. An export holds every body it covers: files are created 0600 (folders 0700),
never over an existing file, and the docs say so (docs/keep.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import format_datetime
from typing import TextIO

from ..core.dates import datetime
from ..core.errors import InvalidInput, NotFound, StoreError, Unreadable
from ..core.message import STATES, Message, State
from ..core.names import check_name
from ..core.query import utc
from ..store import Store
from .finding import utc_bound

FORMATS = ("jsonl", "mbox", "maildir")
_DOMAIN = "mailslot.invalid"


@dataclass(frozen=True)
class Exported:
    """One message as exported: whole, with each recipient's state."""

    message: Message
    states: dict[str, State]
    retracted: bool = False

    def as_dict(self) -> dict[str, object]:
        data: dict[str, object] = self.message.as_dict(with_body=True)
        data["states"] = dict(self.states)
        if self.message.is_broadcast:
            data["retracted"] = self.retracted
        return data


def messages(store: Store, *, agent: str | None = None, since: str | None = None
             ) -> Iterator[Exported]:
    """Every readable message, oldest first; ``agent``: only mail to or from it."""
    name = None if agent is None else check_name(agent, "--for")
    bound = None if since is None else utc_bound(since, "--since", end_of_day=False)
    held: dict[str, dict[str, State]] = {}
    for box in store.agent_names():
        for message_id, state in store.entries(box, STATES):
            held.setdefault(message_id, {})[box] = state
    archived: dict[str, Message] = {}  # copies in month archives: done, as they were
    for message_id in store.archived_ids():
        with contextlib.suppress(NotFound, Unreadable):
            for box, copy in store.archived(message_id):
                if box not in held.setdefault(message_id, {}):
                    held[message_id][box] = "done"
                    archived[message_id] = copy
    casts = {i: True for i in store.broadcast_ids()}
    casts.update({i: False for i in store.broadcast_ids(live=False)})
    seen = {box: store.seen(box) for box in store.agent_names()} if casts else {}
    for message_id in sorted(set(held) | set(casts)):
        try:
            if message_id in casts:
                message, live = store.load_broadcast(message_id)
                states: dict[str, State] = {b: "read" for b, ids in seen.items()
                                            if message_id in ids}
            else:
                states = held[message_id]
                message = archived.get(message_id) or store.load(next(iter(states)),
                                                                 message_id)[0]
                live = True
        except (NotFound, Unreadable):
            continue
        if name is not None and name != message.sender and name not in states \
                and not message.is_broadcast:
            continue
        if bound is not None and utc(message.date) < bound:
            continue
        yield Exported(message, states, retracted=not live)


def export(store: Store, fmt: str, output: str, *, agent: str | None = None,
           since: str | None = None) -> int:
    """Write the export to ``output`` (a new file, or for ``maildir`` a new folder);
    return how many messages it holds. ``-`` is standard output (jsonl and mbox)."""
    if fmt not in FORMATS:
        raise InvalidInput(f"unknown format {fmt!r} (jsonl, mbox, maildir)")
    found = messages(store, agent=agent, since=since)
    old = os.umask(0o077)  # every file and folder the export makes is private
    try:
        if fmt == "maildir":
            return _maildir(found, output, agent)
        if fmt == "mbox":
            return _mbox(found, output)
        return _jsonl(found, output)
    except FileExistsError:
        raise InvalidInput(f"{output} exists already; an export never overwrites") from None
    except BrokenPipeError:
        raise  # the reader of standard output went away (``| head``): the CLI ends quietly
    except OSError as exc:
        raise StoreError(f"cannot write the export {output}: {exc.strerror or exc}") from None
    finally:
        os.umask(old)


def _jsonl(found: Iterator[Exported], output: str) -> int:
    count = 0
    with _new_file(output) as out:
        for item in found:
            out.write(json.dumps(item.as_dict(), ensure_ascii=False) + "\n")
            count += 1
    return count


def _mbox(found: Iterator[Exported], output: str) -> int:
    import mailbox

    if output == "-":
        raise InvalidInput("mbox needs a file (mailslot export --format mbox FILE)")
    os.close(os.open(output, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    box = mailbox.mbox(output)
    count = 0
    try:
        for item in found:
            box.add(email(item))
            count += 1
        box.flush()
    finally:
        box.close()
    return count


def _maildir(found: Iterator[Exported], output: str, agent: str | None) -> int:
    import mailbox

    if output == "-":
        raise InvalidInput("maildir needs a folder (mailslot export --format maildir DIR)")
    if os.path.lexists(output):
        raise FileExistsError(output)
    box = mailbox.Maildir(output, create=True)  # 0700 folders under the export's umask
    count = 0
    for item in found:
        entry = mailbox.MaildirMessage(email(item))
        state = item.states.get(agent) if agent is not None else None
        if state in ("read", "done"):
            entry.set_subdir("cur")
            entry.set_flags("S")
        box.add(entry)
        count += 1
    return count


def email(item: Exported) -> EmailMessage:
    """The message as an e-mail a mail program shows: mailslot's fields as headers."""
    m = item.message
    mail = EmailMessage()
    mail["From"] = f"{m.sender}@{_DOMAIN}"
    mail["To"] = ", ".join(f"{t}@{_DOMAIN}" for t in m.to)
    mail["Subject"] = m.subject
    with contextlib.suppress(ValueError):  # a hand-written date: X-Mailslot-Date keeps it
        mail["Date"] = format_datetime(datetime.fromisoformat(m.date))
    mail["Message-ID"] = f"<{m.id}@{_DOMAIN}>"
    if m.in_reply_to:
        mail["In-Reply-To"] = f"<{m.in_reply_to}@{_DOMAIN}>"
    if m.thread:
        mail["References"] = f"<{m.thread}@{_DOMAIN}>"
    mail["X-Mailslot-Id"] = m.id
    mail["X-Mailslot-Date"] = m.date
    for header, value in (("X-Mailslot-Re-Issue", m.re_issue),
                          ("X-Mailslot-Thread", m.thread),
                          ("X-Mailslot-In-Reply-To", m.in_reply_to)):
        if value:
            mail[header] = value
    if m.expect_reply:
        mail["X-Mailslot-Expect-Reply"] = "true"
    if m.delivery != "inbox":
        mail["X-Mailslot-Delivery"] = m.delivery
    for header, value in (("X-Mailslot-Instance", m.instance),
                          ("X-Mailslot-Notify-When", m.notify_when)):
        if value:
            mail[header] = value
    mail["X-Mailslot-State"] = ", ".join(f"{a}={s}" for a, s in sorted(item.states.items()))
    if item.retracted:
        mail["X-Mailslot-Retracted"] = "true"
    # An mbox writes a body line starting "From " as ">From ", for ever: such a body
    # goes in base64, so `mailslot import mbox` gives it back exactly.
    mangled = any(line.startswith("From ") for line in m.body.split("\n"))
    mail.set_content(m.body + "\n" if m.body else "", charset="utf-8",
                     cte="base64" if mangled else None)
    return mail


@contextlib.contextmanager
def _new_file(path: str) -> Iterator[TextIO]:
    """A new 0600 file (never an existing one, never through a link), synced when
    written; or standard output for ``-``."""
    if path == "-":
        yield sys.stdout
        return
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        yield out
        out.flush()
        os.fsync(out.fileno())
