"""What every feature of :class:`~mailslot.service.mailbox.Mailbox` builds on: the store,
who this process speaks as (and why it may not), the config, the clock, whose mail it
may see, the receipts it writes in its own name; and, for a long-running server
(``serve``), the identity it binds, its session (a replaced one is fenced, and writes
nothing), its presence record, the sessions of every agent, and the ``surfaced``
receipt of mail a tool result carried.

Each feature of the mailbox is a class in its own module that names, as its bases, the
features it builds on; this is the one they all share (see :mod:`.mailbox` for why the
mailbox is made this way).
"""

from __future__ import annotations

import os

from ..access import authority, fencing, instances
from ..access.identity import Identity
from ..backends import no_mailbox
from ..core.config import Config, hostname
from ..core.dates import UTC, datetime
from ..core.errors import InvalidInput, MailslotError, NoIdentity, NotFound, Refused
from ..core.message import Message
from ..core.names import check_name
from ..core.results import WhoAmI
from ..core.text import quoted
from ..mail.posting import Notifier, receipt

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from ..access.authority import Principal
    from ..access.credentials import Credential
    from ..mail.presence import Beacon
    from ..store import Store


class MailboxBase:
    """One process's view of the mailbox: a store, and who this process speaks as."""

    def __init__(
        self,
        store: Store,
        identity: Identity | None = None,
        *,
        clock: Callable[[], datetime] | None = None,
        credential: Credential | None = None,
        peer_of: str | None = None,
    ) -> None:
        self.store = store
        self.identity = identity
        self._clock = clock or (lambda: datetime.fromtimestamp(store.clock(), UTC))
        """Now, by the store's clock: message dates, receipts and presence
        agree between machines whose own clocks do not."""
        self._config: Config | None = None
        self.credential = credential
        """The credential this process speaks with, checked at first use."""
        self.peer_of = peer_of
        """``--peer-of``: speak as a child of this agent without a registration."""
        self._principal: Principal | None = None
        self.session: str | None = None
        """The server session this process is: a fenced one may not write."""
        self.host_pid: int | None = None
        """The host process that started this server: its hook sessions are this
        server's instances too (see :mod:`mailslot.access.instances`)."""
        self._mine: set[str] | None = None
        self.notes: list[str] = []
        """What the last send wants its caller told (a new mailbox, a wake not allowed),
        or a listing of my own mail (a name of mine the mailbox does not know)."""

    @property
    def agent(self) -> str:
        """The identity this process speaks as; raises if there is none."""
        if self.credential is not None:
            return self.principal.name
        if self.identity is None:
            raise NoIdentity(
                "no identity: pass --agent NAME, set MAILSLOT_AGENT, or run inside a git checkout"
            )
        if self.identity.source == "git":
            return self._git_name(self.identity)
        return check_name(self.identity.name, f"agent name (from {self.identity.source})")

    @property
    def principal(self) -> Principal:
        """Who this process speaks as, with its bounds: the credential is
        checked against the store once per service object, so a server that opens one per
        call refuses a rotated or revoked credential at its next call."""
        if self._principal is None:
            if self.credential is not None:
                self._principal = authority.verify(self.store, self.credential,
                                                   self._clock())
            else:
                self._principal = authority.Principal(self.agent, parent=self.peer_of)
        return self._principal

    @staticmethod
    def _git_name(identity: Identity) -> str:
        try:
            return check_name(identity.name, "agent name")
        except InvalidInput as exc:
            folder = os.path.basename(identity.path or "")
            raise NoIdentity(
                f"the git checkout's name {quoted(folder)} does not make an agent name "
                f"({exc}); pass --agent NAME (a-z, 0-9 and '-') or set MAILSLOT_AGENT"
            ) from None

    def whoami(self) -> WhoAmI:
        """Who this process speaks as and why, or why it cannot speak at all."""
        name, problem = None, None
        try:
            name = self.agent
        except InvalidInput as exc:
            problem = str(exc)
        identity = self.identity
        missing = None if self.store.exists() else no_mailbox(self.store.location)
        return WhoAmI(name, identity.source if identity else None,
                      identity.path if identity else None, self.store.location,
                      type(self.store).__name__, problem, missing)

    def require_mailbox(self) -> None:
        """Refuse, in one line and before anything is written, a command that only reads
        or checks when there is no mailbox here: a mistyped ``--dir`` is said, not
        answered with "no messages" (or "ok")."""
        if not self.store.exists():
            raise NotFound(no_mailbox(self.store.location))

    def check_identity(self) -> str:
        """Fail early (before reading a body) when there is no usable identity."""
        return self.agent

    @property
    def config(self) -> Config:
        if self._config is None:
            self._config = Config(self.store.load_config())
        return self._config

    @property
    def max_body_bytes(self) -> int:
        return self.config.max_body_bytes

    def _me(self) -> str | None:
        """This process's agent, or ``None`` without an identity."""
        try:
            return self.agent
        except NoIdentity:
            return None

    @property
    def viewer(self) -> str | None:
        """Whose mail this process may see where it stands: its own agent's, or
        ``None`` for every message's (the config's ``owner``, or a process with no
        identity at all: the person at the mailbox folder, as the CLI runs without
        ``--agent``; every server binds one). A config that cannot be read names no
        owner (fail closed)."""
        if self.identity is None and self.credential is None and self.peer_of is None:
            return None
        me = self.agent
        try:
            owner = self.config.owner
        except MailslotError:
            owner = None
        return None if me == owner and not self.principal.is_child else me

    @property
    def sees_machines(self) -> bool:
        """Is this caller shown where sessions run (process ids, folders, host names)?
        Not a child agent; over HTTP never (:class:`mailslot.frontends.http.bearer.Remote`)."""
        if self.credential is None and self.peer_of is None:
            return True
        return not self.principal.is_child

    def require_owner(self, doing: str) -> None:
        """``Refused`` unless this process is the owner (:attr:`viewer` ``None``): what
        only the person decides (a pause, archiving mail)."""
        if self.viewer is None:
            return
        try:
            owner = self.config.owner
        except MailslotError:
            owner = None
        named = f"the owner, {owner}" if owner else "the owner (config.json owner, unset)"
        how = f"--agent {owner}, or " if owner else ""
        raise Refused(f"only {named}, may {doing}, and this process speaks as "
                      f"{self.viewer}; nothing was changed (run it as {how}a process "
                      "with no agent identity: outside any git checkout, without --agent "
                      "or MAILSLOT_AGENT)")

    def now(self) -> datetime:
        """The time as this mailbox tells it (the store's clock, or a test's)."""
        return self._clock()

    def _event(self, kind: str, message_id: str, *, durable: bool = False,
               **extra: Any) -> None:
        """Add a receipt in this process's name (best effort; see :func:`receipt`)."""
        if "agent" not in extra and self.identity is not None:
            extra["agent"] = self.agent
        receipt(self.store, self._clock, kind, message_id, durable=durable, **extra)

    def notifier(self) -> Notifier:
        """What mailslot's own modules use to tell an agent something (wake failures)."""
        return Notifier(self.store, self._clock)

    def _unfenced(self) -> None:
        """A replaced (fenced) server session writes nothing."""
        if self.session is not None:
            fencing.check(self.store, self.agent, self.session)

    def my_instances(self) -> set[str] | None:
        """The sessions this process is (``None``: it is none, as the CLI): its server
        session and its host's hook sessions (:mod:`mailslot.access.instances`)."""
        if self.session is None:
            return None
        if self._mine is None:
            self._mine = instances.of_server(self.store, self.agent, self.session,
                                             self.host_pid or os.getppid(), hostname())
        return self._mine

    def _for_me(self, message: Message) -> bool:
        """May this process see ``message`` (not another session's ``name@session``)?
        The sessions it is are looked up only for such mail."""
        return message.instance is None or message.shown_to(self.my_instances())

    def bound_agent(self) -> str:
        """The identity a long-running server binds: ``--agent`` or ``MAILSLOT_AGENT`` only.

        A server (and what ``install`` registers) outlives the command line that started
        it, so it never guesses from the git checkout: two hosts in one checkout would
        silently share an identity.
        """
        if self.identity is None or self.identity.source == "git":
            raise NoIdentity(
                "no identity: a server (and what install registers) needs --agent NAME or "
                "MAILSLOT_AGENT; the git checkout's name is not used"
            )
        return self.agent

    def beacon(self, **options: Any) -> Beacon:
        """The presence record of this process's server (``bound_agent``'s)."""
        from ..mail.presence import Beacon

        return Beacon(self.store, self.bound_agent(), session=self.session, **options)

    def surfaced(self, messages: Sequence[Message], *, host: str | None = None,
                 mark: str = "") -> None:
        """The ladder's receipt that a tool result carrying ``messages`` (of this
        agent's own mailbox) was handed to the host (:mod:`mailslot.service.ladder`);
        call only once it was written. ``host``: the program that started this
        process, by default; ``mark``: the result's fingerprint (:mod:`.seen`)."""
        from ..mail.presence import parent_program
        from . import ladder

        ladder.record_surfaced(self.store, self.agent, messages,
                               host=host or parent_program() or "mcp",
                               session=self.session, how="tool", mark=mark)

    def start_session(self, session: str, *, exclusive: bool = False,
                      replace: str | None = None) -> list[str]:
        """Become server session ``session`` of this agent (see :mod:`fencing`)."""
        notes = fencing.start(self.store, self.bound_agent(), session, exclusive=exclusive,
                              replace=replace, now=self._clock())
        self.session = session
        return notes

    def sessions(self, name: str | None = None) -> list[dict[str, Any]]:
        """The sessions of ``name``, or of every agent: servers and hook sessions (where
        they run only for a caller that :attr:`sees_machines`)."""
        agent = check_name(name, "agent") if name is not None else None
        return fencing.sessions(self.store, agent, self._clock(),
                                machines=self.sees_machines)
