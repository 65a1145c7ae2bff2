"""The file store's registered agents::

    registry/<name>.json    one agent's record: parent, runtime, generation, the hash of
                            its credential's secret, revoked, created (never the secret)

A part of :class:`~.file_store.FileStore` (a base class of it), like
:mod:`.sessions` and :mod:`.wakes`. A record is written whole in ``tmp/`` and linked
(new) or renamed (replaced) into place, so a reader never sees half of one. On the hook
path's import chain, so it loads only ``os`` and ``json`` at import.
"""

from __future__ import annotations

import os

from ...core.durable import fsync_dir
from ...core.errors import NotFound, Unreadable, UnsafePath
from ...core.names import is_valid_name
from ...store.format import decode_record, encode_record
from .fs import file_names, read_file, store_error
from .layout import MailboxFiles

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ...store.records import AgentRecord



class RegistryFiles(MailboxFiles):
    """Registered agents of :class:`~.file_store.FileStore`, one file each."""

    def _record_path(self, name: str, *, create: bool = False) -> str:
        if not is_valid_name(name):
            raise UnsafePath(f"agent name {name!r} is not safe as a file name")
        return os.path.join(self._folder("registry", create=create), f"{name}.json")

    def register_agent(self, record: AgentRecord) -> bool:
        """Link the record into place (never over another): ``False`` if one exists."""
        target = self._record_path(record.name, create=True)
        tmp = self._stage(encode_record(record), f"registry-{record.name}")
        try:
            os.link(tmp, target)
        except FileExistsError:
            return False
        except OSError as exc:
            raise store_error(exc, f"cannot register {record.name}") from None
        finally:
            os.unlink(tmp)
        fsync_dir(os.path.dirname(target))
        return True

    def registered(self, name: str) -> AgentRecord | None:
        path = self._record_path(name)
        try:
            data = read_file(path)
        except FileNotFoundError:
            return None
        return decode_record(data, name, path)

    def registered_agents(self) -> list[AgentRecord]:
        found = []
        for file in sorted(file_names(self._folder("registry"))):
            name = file[:-5]
            if not file.endswith(".json") or not is_valid_name(name):
                continue
            try:
                record = self.registered(name)
            except (Unreadable, UnsafePath):
                continue  # doctor names it; a listing goes on
            if record is not None:
                found.append(record)
        return found

    def replace_registered(self, record: AgentRecord) -> None:
        target = self._record_path(record.name)
        if not os.path.lexists(target):
            raise NotFound(f"no registered agent {record.name}")
        tmp = self._stage(encode_record(record), f"registry-{record.name}")
        try:
            os.rename(tmp, target)
        except OSError as exc:
            os.unlink(tmp)
            raise store_error(exc, f"cannot update {record.name}'s registration") from None
        fsync_dir(os.path.dirname(target))


