"""The file store's gates (rules in :mod:`mailslot.access.gates`)::

    gates/<agent>/accept            "members" when the inbox is gated, "group:<group>" when
                                    a group gate holds it (absent: open)
    gates/+<group>/members|pending  a group gate's members and requests
    gates/<agent>/members/<name>    one empty file per admitted agent
    gates/<agent>/pending/<name>    the id of <name>'s open access request
    gates/<agent>/passed            ids the service let through the gate, one a line

A part of :class:`~.file_store.FileStore` (a base class of it). Each change is
one create, rename or unlink, so two processes answering at once never half-apply one.
On the hook path's import chain: ``os`` only.
"""

from __future__ import annotations

import os

from ...core.durable import fsync_dir, remove
from ...core.errors import UnsafePath
from ...core.ids import is_id
from ...core.names import is_accept, is_gate_key, is_valid_name
from .fs import append, file_names, read_file, read_lines, write_new
from .layout import MailboxFiles

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence


class GateFiles(MailboxFiles):
    """Gates of :class:`~.file_store.FileStore`: who may write to an agent."""

    def _gate(self, agent: str, *parts: str, create: bool = False) -> str:
        if not is_gate_key(agent):
            raise UnsafePath(f"gate {agent!r} is not safe as a file name")
        for name in parts[1:]:
            if not is_valid_name(name):
                raise UnsafePath(f"agent name {name!r} is not safe as a file name")
        if parts:
            return os.path.join(self._folder("gates", agent, parts[0], create=create),
                                *parts[1:])
        return self._folder("gates", agent, create=create)

    def set_accept(self, agent: str, accept: str) -> None:
        """Open (``"open"``) or gate (``"members"``) ``agent``'s inbox, durably."""
        path = os.path.join(self._gate(agent, create=True), "accept")
        if accept == "open":
            remove(path)
        else:
            staged = self._stage(accept.encode(), f"gate-{agent}")
            os.replace(staged, path)
        fsync_dir(os.path.dirname(path))

    def accept_of(self, agent: str) -> str:
        """``"members"`` for a gated inbox, ``"open"`` otherwise (and when unreadable,
        ``"members"``: a gate that cannot be read stays shut)."""
        path = os.path.join(self._gate(agent), "accept")
        try:
            value = read_file(path).decode("ascii", "replace").strip()
        except FileNotFoundError:
            return "open"
        return value if is_accept(value) else "members"

    def gated(self) -> dict[str, str]:
        found: dict[str, str] = {}
        try:
            with os.scandir(self._folder("gates")) as entries:
                names = sorted(e.name for e in entries if e.is_dir(follow_symlinks=False)
                               and is_valid_name(e.name))
        except FileNotFoundError:
            return found
        for name in names:
            try:
                accept = self.accept_of(name)
            except UnsafePath:
                continue  # a planted link: doctor names it
            if accept != "open":
                found[name] = accept
        return found

    def set_member(self, agent: str, member: str, admitted: bool) -> bool:
        """Admit ``member`` to (or remove it from) ``agent``'s members; ``False`` if it
        already was (or was not) one."""
        path = self._gate(agent, "members", member, create=admitted)
        if not admitted:
            return remove(path)
        try:
            write_new(path, b"", sync=True)
        except FileExistsError:
            return False
        fsync_dir(os.path.dirname(path))
        return True

    def members(self, agent: str) -> list[str]:
        folder = os.path.join(self._gate(agent), "members")
        return sorted(n for n in file_names(folder) if is_valid_name(n))

    def set_request(self, agent: str, requester: str, message_id: str | None) -> None:
        """Record ``requester``'s open request to write to ``agent`` (the message that
        carries it), or with ``None`` close it."""
        path = self._gate(agent, "pending", requester, create=message_id is not None)
        if message_id is None:
            remove(path)
            return
        staged = self._stage(message_id.encode(), f"request-{agent}")
        os.replace(staged, path)
        fsync_dir(os.path.dirname(path))

    def requests(self, agent: str) -> dict[str, str]:
        """Open requests to write to ``agent``: requester -> request message id."""
        folder = os.path.join(self._gate(agent), "pending")
        found: dict[str, str] = {}
        for name in file_names(folder):
            try:
                message_id = read_file(os.path.join(folder, name)).decode().strip()
            except (FileNotFoundError, UnicodeDecodeError, UnsafePath):
                continue
            if is_valid_name(name) and is_id(message_id):
                found[name] = message_id
        return found

    def add_passed(self, agent: str, message_ids: Sequence[str]) -> None:
        """Record, durably and before delivery, that the service let these through."""
        if message_ids:
            data = "".join(f"{i}\n" for i in message_ids).encode()
            append(os.path.join(self._gate(agent, create=True), "passed"), data, sync=True)

    def passed(self, agent: str) -> set[str]:
        """Ids the service let through ``agent``'s gate."""
        return read_lines(os.path.join(self._gate(agent), "passed"))
