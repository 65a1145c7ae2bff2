"""The service: every rule of mailslot, over any :class:`~mailslot.store.Store`.

Front ends (CLI, MCP server, hooks, watcher) call a :class:`Mailbox` and hold no rule of
their own: identity, validation, limits, reply routing, broadcast visibility and who may
retract all live here, once, or in the feature below that owns the rule (``access/``,
``mail/``, ``wake/``, ``keep/``).

:class:`Mailbox` is the one entry point, made of one class per feature, each in its own
module and read in this order:

- :mod:`.mailbox_base`: the store, who this process speaks as, the config, the clock,
  whose mail it may see, receipts, and the server (``serve``) it may be;
- :mod:`.id_resolution`: naming a message (whole ids, short forms) and finding my copy;
- :mod:`.listings`: a page of mail, what I sent, who is there;
- :mod:`.message_states`: read, done, retract, and where a message stands;
- :mod:`.sending`: send, broadcast, reply, an access request, and the wakes they queue;
- :mod:`.peering`: this mailbox as a node, its peers over ssh, both ends of a link;
- :mod:`.administration`: wake and bridge settings, the owner's pause, removing an
  agent, ``doctor``.

Why one class made of feature classes (mixins), not feature objects the mailbox holds
and forwards to: a front end has one object with every operation on it, and no
operation's signature is written twice (once in a feature, once again to forward it).
A feature names the features it builds on as its bases (``Sending(MessageStates)``: a
reply marks the original done), so every call between features is an ordinary method
call that mypy checks, and each module's class line says what it depends on. A
subclass that narrows one step, as the HTTP front end's
:class:`~mailslot.frontends.http.bearer.Remote` narrows which mailboxes a caller may
list, changes it for every feature at once.
"""

from __future__ import annotations

import os

from ..access.identity import Identity, derive_identity
from ..backends import open_store
from ..core.errors import InvalidInput
from ..core.names import check_name
from .administration import Administration
from .peering import Peering

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path


class Mailbox(Peering, Administration):
    """One process's view of the mailbox: a store, and who this process speaks as.

    Every operation comes from a feature class (see the module's docstring); this
    class adds only how one is opened from a command line's options.
    """

    @classmethod
    def open(
        cls,
        root: str | None = None,
        agent: str | None = None,
        *,
        env: Mapping[str, str] = os.environ,
        cwd: Path | None = None,
        credential: str | None = None,
        peer_of: str | None = None,
    ) -> Mailbox:
        """The store at ``--dir``/``MAILSLOT_DIR``/``~/mailslot`` as ``agent``.

        With a ``credential`` file (else a binding its launcher handed this process,
        ``MAILSLOT_BINDING``, else ``MAILSLOT_CREDENTIAL``) the identity is the
        credential's agent, checked against the store at first use, and the store is the
        credential's unless one is named. ``peer_of`` (or ``MAILSLOT_PEER_OF``) binds the
        child rules to an unregistered agent.
        """
        from ..access.credentials import read_binding, read_credential

        binding = None if credential else env.get("MAILSLOT_BINDING") or None
        path = credential or binding or env.get("MAILSLOT_CREDENTIAL") or None
        held = (read_binding(path) if binding else read_credential(path)) if path else None
        if held is not None and root is None and not env.get("MAILSLOT_DIR"):
            root = held.store
        store = open_store(root, env)
        if held is None:
            identity = derive_identity(agent, env, cwd)
        else:
            if agent is not None and check_name(agent, "--agent") != held.agent:
                raise InvalidInput(f"--agent {agent} does not match the credential, which "
                                   f"is {held.agent}'s; drop one of the two")
            if held.store != store.location:
                raise InvalidInput(f"the credential {path} is for the mailbox at "
                                   f"{held.store}, not {store.location}")
            identity = Identity(held.agent, "credential")
        parent = peer_of or env.get("MAILSLOT_PEER_OF") or None
        return cls(store, identity, credential=held,
                   peer_of=check_name(parent, "--peer-of") if parent else None)
