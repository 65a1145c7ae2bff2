"""A bearer secret (``serve --http``) → the mailbox of the registered agent that holds it.

An HTTP request carries only the secret of a credential file, not its agent's name. The
agent is found by the secret's hash among the registered agents (each compared in
constant time), then everything else is :func:`mailslot.access.authority.verify`'s, as for a
local ``--credential``: wrong, rotated and revoked secrets, and children whose parent
was rotated or revoked, are all ``Unauthorized``, never saying which. Found names are
remembered by hash so a request reads one record, not all; the check itself runs on
every call, so a rotated or revoked credential is refused at its next request.

Over HTTP an agent lists only its own inbox (:class:`Remote`): the credential, not the
folder's permissions, is what keeps one agent out of another's mail there.
"""

from __future__ import annotations

import hashlib
import threading

from ...access.credentials import Credential, secret_matches
from ...access.identity import Identity
from ...core.errors import Refused, Unauthorized
from ...service.mailbox import Mailbox
from ...store import Store


class Remote(Mailbox):
    """The mailbox of a caller over HTTP. Locally the folder is no secrecy boundary
    (``inbox --for NAME`` shows others' headers); over HTTP the credential is the only
    key, so it opens its own inbox and nothing else."""

    def _mailboxes(self, for_: str | None) -> list[str]:
        if for_ is not None and for_.lower() != self.agent:
            raise Refused(f"{self.agent} reads only its own inbox over HTTP")
        return super()._mailboxes(for_)

    @property
    def sees_machines(self) -> bool:
        """A remote agent sees who is online, never where a session runs: the pids,
        folders and host names of the machine serving it are not its to know."""
        return False


class Bearers:
    """``Bearers(store).open(secret)``: the checked mailbox a secret speaks as."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._names: dict[str, str] = {}  # sha256 of a secret → the agent it was for
        self._lock = threading.Lock()

    def open(self, secret: str) -> Mailbox:
        key = hashlib.sha256(secret.encode()).hexdigest()
        with self._lock:
            name = self._names.get(key)
        record = self.store.registered(name) if name is not None else None
        if record is None or not secret_matches(record.secret_hash, secret):
            record = next((r for r in self.store.registered_agents()
                           if secret_matches(r.secret_hash, secret)), None)
        if record is None:
            raise Unauthorized("the credential is not accepted (wrong, rotated or revoked)")
        with self._lock:
            self._names[key] = record.name
        held = Credential(record.name, secret, self.store.location, record.generation,
                          record.parent_generation)
        box = Remote(self.store, Identity(record.name, "credential"), credential=held)
        box.principal  # noqa: B018  (checked now: revoked, or a child of a rotated parent)
        return box
