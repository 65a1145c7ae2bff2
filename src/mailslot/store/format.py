"""The mailbox as files: the one public format (docs/format.md) every backend shares.

The file store keeps its mailbox in this layout; a backup is this layout whichever
backend it came from; the PostgreSQL store keeps message and registration files in these
same encodings. On the hook path, so it loads only :mod:`~mailslot.core.jsontext` at import.
"""

from __future__ import annotations

from ..core import jsontext
from ..core.errors import StoreError, Unreadable
from ..core.message import from_bytes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from ..core.message import Message, State
    from .records import AgentRecord

FOLDER_OF: dict[State, str] = {"unread": "new", "read": "cur", "done": "done"}
"""The folder of ``agents/<name>/`` holding the messages in each state."""
EVENTS = "events.jsonl"
"""The events log's current segment, in ``log/``; older ones are ``events.NNNNNN.jsonl``."""
SESSIONS = "sessions.jsonl"
"""The session log of started sessions, in ``log/``."""
SEGMENT_BYTES = 8 << 20
"""Past this size the current segment is rolled to a numbered one (see docs/format.md)."""


def event_segments(names: Iterable[str]) -> list[str]:
    """The events log's files among ``names``, oldest first (the current one last)."""
    rolled = sorted(n for n in names if n.startswith("events.") and n.endswith(".jsonl")
                    and n[7:-6].isdigit())
    return rolled + ([EVENTS] if EVENTS in names else [])


def parse_message_file(data: bytes, message_id: str, path: str, header_only: bool) -> Message:
    """A message file's contents; its file name, not its header, says which id it is."""
    message = from_bytes(data, name=path, header_only=header_only)
    if message.id != message_id:
        raise Unreadable(f"{path}: its header names another id ({message.id[:80]!r}); "
                         "mailslot skips it (see mailslot doctor)")
    return message


_FIELDS = ("name", "secret_hash", "generation", "parent", "parent_generation", "runtime",
           "revoked", "created")
_OPTIONAL = ("expires",)
"""Fields an older mailslot did not write: absent, they are ``None``."""


def encode_record(record: AgentRecord) -> bytes:
    import json  # indented: json's own writer (the hook path only reads records)

    data = {field: getattr(record, field) for field in (*_FIELDS, *_OPTIONAL)}
    return (json.dumps(data, indent=2) + "\n").encode("utf-8")


def decode_record(data: bytes, name: str, path: str) -> AgentRecord:
    """A record, checked field by field: a damaged one is ``Unreadable``, never trusted."""
    from .records import AgentRecord

    try:
        raw = jsontext.loads(data.decode("utf-8"))
        if not isinstance(raw, dict) or raw.get("name") != name:
            raise ValueError("wrong name")
        fields: dict[str, Any] = {field: raw[field] for field in _FIELDS}
        fields.update({field: raw.get(field) for field in _OPTIONAL})
        record = AgentRecord(**fields)
        kinds = [(record.secret_hash, (str,)), (record.created, (str,)),
                 (record.generation, (int,)), (record.revoked, (bool,)),
                 (record.parent, (str, type(None))), (record.runtime, (str, type(None))),
                 (record.parent_generation, (int, type(None))),
                 (record.expires, (str, type(None)))]
        if not all(type(value) in kind for value, kind in kinds):
            raise ValueError("wrong field type")
        if record.expires is not None:
            _moment(record.expires)  # a time that cannot be read is no expiry: unreadable
    except (ValueError, UnicodeDecodeError, KeyError, TypeError):
        raise Unreadable(f"{path} is not a registration mailslot wrote; the agent cannot "
                         "be used until it is fixed or registered again") from None
    return record


LAYOUT_NAMES = frozenset({
    "config.json", "config.lock", "agents", "broadcast", "tmp", "log", "quarantine",
    "presence", "sessions", "claims", "waiters", "hook-sessions", "instances", "wake",
    "limits", "archive", "index", "tally", "sent", "registry", "gates", "fences",
    "latest", "sidecars", "watcher", "bank", "peers"})
"""What mailslot writes at the top of a mailbox folder (docs/format.md's layout): a
folder holding any of them is a mailbox."""


def free_for_mailbox(path: str) -> bool:
    """May the folder ``path`` hold a mailbox: it does not exist, is empty, or holds
    one of the layout's names already? A folder of other things (a home, a project)
    is not one: nothing fills it with a mailbox unless asked (``--init``)."""
    import os

    try:
        names = os.listdir(path)
    except FileNotFoundError:
        return True
    except NotADirectoryError:
        return False
    except OSError as exc:
        raise StoreError(f"cannot list {path}: {exc.strerror or exc}") from None
    return not names or not LAYOUT_NAMES.isdisjoint(names)


def _moment(text: str) -> None:
    """``text`` is an ISO 8601 time with an offset, or ``ValueError``."""
    from ..core.dates import datetime

    if datetime.fromisoformat(text).tzinfo is None:
        raise ValueError("a time without an offset")


def is_kept_file(name: str) -> bool:
    """Is ``name`` (relative, ``/``-separated) a file of the mailbox layout a backup
    holds (docs/format.md)? Only these: the config, messages and broadcasts under their
    ids, seen sets, the events and session logs, registrations, gates, mail for one
    session and queued wakes and notices. Staging, the index, running processes' records
    and anything else (``tmp/junk``, ``evil.sh``, ``../x``) are not."""
    from ..core.ids import is_id
    from ..core.names import is_gate_key, is_valid_name
    from .namespaces import NOTIFY_QUEUES
    from .records import notify_lane

    def agent(raw: str) -> bool:
        return is_valid_name(raw) and raw == raw.lower()

    def message(raw: str) -> bool:
        return raw.endswith(".md") and is_id(raw[:-3])

    queues = {"wake", *(f"wake/{notify_lane(lane)}" for lane in range(NOTIFY_QUEUES))}
    parts = name.split("/")
    match parts:
        case ["config.json"]:
            return True
        case ["agents", who, "new" | "cur" | "done", file]:
            return agent(who) and message(file)
        case ["broadcast", "live" | "retracted", file]:
            return message(file)
        case ["broadcast", "seen", who]:
            return agent(who)
        case ["log", file]:
            return file == SESSIONS or event_segments([file]) == [file]
        case ["registry", file]:
            return file.endswith(".json") and agent(file[:-5])
        case ["gates", key, "accept" | "passed"]:
            return is_gate_key(key) and key == key.lower()
        case ["gates", key, "members" | "pending", who]:
            return is_gate_key(key) and key == key.lower() and agent(who)
        case ["instances", who, message_id]:
            return agent(who) and is_id(message_id)
        case [*queue, "pending", who, message_id] if "/".join(queue) in queues:
            return agent(who) and is_id(message_id)
    return False
