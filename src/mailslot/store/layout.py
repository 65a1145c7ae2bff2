"""Where things live in the mailbox folder, and what every reader of it does alike.

:class:`MailboxFiles` is the part the file store and the hooks' lean view share:
listing a mailbox, the broadcasts served to an agent, the events log, the config and
the staging area. Their rules about touching files are in :mod:`.fs`; the layout is
in docs/format.md. On the hook path, so it loads nothing heavy (see docs/hooks.md,
"Speed").
"""

from __future__ import annotations

import json
import os

from ..errors import StoreError
from .fs import Folders, append, ids_in, read_file, read_lines, store_error, write_new

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any

    from ..message import State

FOLDER_OF: dict[State, str] = {"unread": "new", "read": "cur", "done": "done"}
"""The folder of ``agents/<name>/`` holding the messages in each state."""


class MailboxFiles(Folders):
    """The mailbox folder at ``root`` (an absolute path), as every reader sees it."""

    def _box(self, agent: str, state: State, *, create: bool = False) -> str:
        return self._folder("agents", agent, FOLDER_OF[state], create=create)

    def _stage(self, data: bytes, name: str, *, sync: bool = True) -> str:
        """A fresh file in ``tmp/`` holding ``data``, to be linked or renamed into place."""
        folder = self._folder("tmp", create=True)
        path = os.path.join(folder, f"{name}.{os.getpid()}.{os.urandom(4).hex()}")
        write_new(path, data, sync=sync)
        return path

    # Mail ----------------------------------------------------------------------------
    def entries(self, agent: str, states: Iterable[State]) -> list[tuple[str, State]]:
        """The ids in ``agent``'s mailbox in those states, in no particular order."""
        return [(message_id, state) for state in states
                for message_id in ids_in(self._box(agent, state))]

    def broadcast_ids(self, *, live: bool = True) -> list[str]:
        """Ids of standing (``live``) or retracted broadcasts."""
        return ids_in(self._folder("broadcast", "live" if live else "retracted"))

    # Broadcasts served ---------------------------------------------------------------
    def seen(self, agent: str) -> set[str]:
        """Broadcast ids ``agent`` has been served."""
        return read_lines(os.path.join(self._folder("broadcast", "seen"), agent))

    def add_seen(self, agent: str, message_ids: Sequence[str]) -> None:
        """Record broadcasts as served to ``agent``, durably."""
        if message_ids:
            path = os.path.join(self._folder("broadcast", "seen", create=True), agent)
            append(path, "".join(f"{i}\n" for i in message_ids).encode(), sync=True)

    # Everything else -----------------------------------------------------------------
    def append_event(self, event: Mapping[str, Any]) -> None:
        """A receipt in the events log (not synced: the folders are the truth)."""
        line = json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n"
        path = os.path.join(self._folder("log", create=True), "events.jsonl")
        append(path, line.encode("utf-8"), sync=False)

    def load_config(self) -> dict[str, Any]:
        """The raw config (``{}`` when there is none); ``StoreError`` if unreadable."""
        path = os.path.join(self.root, "config.json")
        try:
            data = read_file(path)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise store_error(exc, f"cannot read {path}") from None
        try:
            config = json.loads(data.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise StoreError(f"{path} is not valid JSON ({exc}); fix or remove it") from None
        if not isinstance(config, dict):
            raise StoreError(f"{path} must hold a JSON object")
        return config
