"""Gates and admission: an agent may close its inbox to all but admitted members.

API, reached as ``Mailbox.gate`` (a :class:`Gate` over the service)::

    passes(store, config, principal, recipient) -> bool
                            may ``principal`` write to ``recipient`` now?
    check(store, config, principal, recipients)
                            ``Refused`` (nothing sent) naming each gated recipient and how
                            to ask
    Gate.join(name, note)   an access request: always passes the gate, reaches ``name``
                            as a message (framed like all mail), and stays pending
    Gate.admit / refuse / revoke(name), Gate.pending(), Gate.switch(on, group),
    Gate.status()           the gate's owner answers and manages it (never a child agent)
    ManagedGate(box)        the same gate, managed by the mailbox's owner from the settings
                            page: the same code, without the agent's credential

Who passes a gate of ``members``: admitted members, the agent itself, its registered
parent and children, the config's ``owner`` and mailslot's own notices. A ``--peer-of``
child is bound by the child rules but holds no proof that the parent made it: anyone
can say ``--peer-of``, so it passes only once admitted, like any other agent. Replies
are not gated: they answer mail the gated agent chose to be part of.

**Group gates.** ``gate on --name GROUP`` puts an inbox behind the gate of ``GROUP``:
every agent whose inbox is in the group shares one member list and one set of join
requests, so a member admitted by any of them may write to all of them, and a request
to any of them is pending for all. The first agent founds the group; another may put its
inbox in it only once admitted to it (else anyone could join a group and then admit
whom it likes to its founder's inbox). ``gate off`` leaves the group (the inbox is open
again); the group lives on for the others.
"""

from __future__ import annotations

from ..core.config import Config
from ..core.errors import InvalidInput, NotFound, Refused, Unreadable, UnsafePath
from ..core.framing import command
from ..core.names import GROUP_ACCEPT, GROUP_MARK, SYSTEM_SENDER, check_name, is_valid_name
from ..core.text import MAX_SUBJECT_LENGTH, clean_body
from ..core.values import Protocol
from ..mail.invocation import invocation
from .authority import check_write

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..core.message import Message
    from ..mail.posting import Notifier
    from ..store import Store
    from .authority import Principal


class Speaker(Protocol):
    """What a gate needs of the service (:class:`~mailslot.service.mailbox.Mailbox`)."""

    store: Store

    @property
    def agent(self) -> str: ...

    @property
    def config(self) -> Config: ...

    @property
    def principal(self) -> Principal: ...

    @property
    def max_body_bytes(self) -> int: ...

    def request(self, to: str, subject: str, body: str,
                record: Callable[[Message], None]) -> Message: ...

    def notifier(self) -> Notifier: ...


def _family(store: Store, sender: str, recipient: str) -> bool:
    """Is one the registered parent of the other?"""
    try:
        mine, theirs = store.registered(sender), store.registered(recipient)
    except (Unreadable, UnsafePath):
        return False
    return (mine is not None and mine.parent == recipient) or \
        (theirs is not None and theirs.parent == sender)


def group_of(accept: str) -> str | None:
    """The group of a gate setting ``group:GROUP``; ``None`` for any other."""
    return accept[len(GROUP_ACCEPT):] if accept.startswith(GROUP_ACCEPT) else None


def key_of(store: Store, agent: str) -> str | None:
    """Where ``agent``'s gate keeps its members and requests: its own name, a group's
    key ``+GROUP``, or ``None`` for an open inbox."""
    accept = store.accept_of(agent)
    if accept == "open":
        return None
    group = group_of(accept)
    return agent if group is None else GROUP_MARK + group


def passes(store: Store, config: Config, principal: Principal, recipient: str) -> bool:
    key = key_of(store, recipient)
    if key is None:
        return True
    sender = principal.name
    if sender in (recipient, SYSTEM_SENDER, config.owner):
        return True
    return sender in store.members(key) or _family(store, sender, recipient)


def check(store: Store, config: Config, principal: Principal, recipients: list[str]
          ) -> None:
    shut = [r for r in recipients if not passes(store, config, principal, r)]
    if shut:
        names = ", ".join(shut)
        raise Refused(f"{names} accept{'s' if len(shut) == 1 else ''} mail only from "
                      f"admitted members; nothing was sent. Ask first: mailslot join "
                      f"{shut[0]} --note TEXT (or the gate tool, action join)")


def set_aside(store: Store, agent: str, notifier: Notifier) -> list[str]:
    """The door of a gated inbox: a message that did not come through the service (a
    file written into the folder by hand) is moved to the quarantine, never shown, and
    its claimed sender is told. Returns the ids set aside."""
    if store.accept_of(agent) == "open":
        return []
    passed = store.passed(agent)
    strays = [i for i, _ in store.entries(agent, ("unread", "read")) if i not in passed]
    for message_id in strays:
        try:
            sender: str | None = store.load(agent, message_id, header_only=True)[0].sender
        except (Unreadable, UnsafePath, NotFound):
            sender = None
        try:
            store.quarantine(agent, message_id)
        except NotFound:
            continue  # moved meanwhile
        if sender and sender not in (agent, SYSTEM_SENDER) and is_valid_name(sender):
            notifier.tell(sender, f"your message to {agent} was set aside",
                          f"A message from you ({message_id}) reached {agent}'s gated "
                          f"inbox without going through mailslot, so {agent} is not shown "
                          f"it. Ask for access: mailslot join {agent} --note TEXT.")
    return strays


class Gate:
    """The gate of the agent a :class:`~mailslot.service.mailbox.Mailbox` speaks as."""

    def __init__(self, box: Speaker) -> None:
        self.box = box

    def _owner(self) -> str:
        """Who manages this gate: the agent itself (with its credential, if registered),
        never a child agent."""
        principal = self.box.principal
        check_write(self.box.store, self.box.config, principal)
        if principal.is_child:
            raise Refused(f"{principal.name} is a child agent: it cannot change gates")
        return principal.name

    def join(self, name: str, note: str) -> Message:
        """Ask ``name`` for access: a message that always passes its gate."""
        me, target = self.box.agent, check_name(name, "agent")
        key = key_of(self.box.store, target)
        if key is None:
            raise InvalidInput(f"{target}'s inbox is open: send to it directly")
        if me in self.box.store.members(key):
            raise InvalidInput(f"you are already a member of {target}'s gate")
        body = clean_body(note, self.box.max_body_bytes)
        subject = f"Access request: {me} asks to write to you"[:MAX_SUBJECT_LENGTH]
        cli = invocation(target, self.box.store.location)  # as target's shell runs it
        text = (f"{body}\n\n(answer with `{command(cli, f'admit {me}')}` or "
                f"`{command(cli, f'refuse {me}')}`, or the gate tool)")
        store = self.box.store
        # recorded before it is delivered: a store that enforces gates where the rows
        # are written (PostgreSQL) lets a non-member's message in only as its request
        return self.box.request(target, subject, text,
                                lambda message: store.set_request(key, me, message.id))

    def admit(self, name: str) -> bool:
        """Let ``name`` write to me, answering its request if any (it is told);
        ``False`` if it was a member already."""
        me, who = self._owner(), check_name(name, "agent")
        key = self._key(me)
        asked = who in self.box.store.requests(key)
        changed = self.box.store.set_member(key, who, True)
        self.box.store.set_request(key, who, None)
        if asked or changed:
            self.box.notifier().tell(who, f"{me} admitted you",
                                     f"{me} admitted you: you may now write to "
                                     f"{self._whom(me, key)}.")
        return changed

    def refuse(self, name: str) -> None:
        """Turn down ``name``'s pending request (it is told)."""
        me, who = self._owner(), check_name(name, "agent")
        key = self._key(me)
        if who not in self.box.store.requests(key):
            raise InvalidInput(f"{who} has no pending request (see mailslot pending)")
        self.box.store.set_request(key, who, None)
        self.box.notifier().tell(who, f"{me} refused your request",
                                 f"{me} refused your request to write to {me}.")

    def revoke(self, name: str) -> bool:
        """Take ``name`` off my members; ``False`` if it was not one."""
        me = self._owner()
        return self.box.store.set_member(self._key(me), check_name(name, "agent"), False)

    def pending(self) -> dict[str, str]:
        """Open requests to write to me (to my group, if my gate is one's): requester ->
        request message id."""
        return self.box.store.requests(self._key(self.box.agent))

    def _key(self, me: str) -> str:
        """Where my gate's members and requests are (my name while my inbox is open,
        so members admitted before ``gate on`` are kept)."""
        return key_of(self.box.store, me) or me

    def _whom(self, me: str, key: str) -> str:
        """Who a member of the gate at ``key`` may write to, for the notice."""
        if not key.startswith(GROUP_MARK):
            return me
        group = key[len(GROUP_MARK):]
        return f"every agent of group {group} ({', '.join(self.group(group))})"

    def group(self, group: str) -> list[str]:
        """The agents whose inbox is behind the gate of ``group`` (one with no mailbox
        yet too: its founder may have none)."""
        return sorted(a for a, accept in self.box.store.gated().items()
                      if accept == GROUP_ACCEPT + group)

    def switch(self, on: bool, group: str | None = None) -> None:
        """Gate my inbox (``on``: members only; with ``group``: behind that group's
        shared gate) or open it (``group``, if given, must be the one it is in)."""
        me = self._owner()
        store = self.box.store
        current = group_of(store.accept_of(me))
        if group is not None:
            group = check_name(group, "group name")
        if not on:
            if group is not None and current != group:
                raise InvalidInput(f"your inbox is not behind group {group}'s gate "
                                   "(mailslot gate shows it); nothing changed")
            store.set_accept(me, "open")
            return
        if group is not None and current != group:
            others = [a for a in self.group(group) if a != me]
            if others and me not in store.members(GROUP_MARK + group):
                raise Refused(f"group {group} is kept by {', '.join(others)}: ask to be "
                              f"admitted first (mailslot join {others[0]} --note TEXT); "
                              "nothing changed")
        # what is already there came through the service, or before the gate
        held = [i for i, _ in store.entries(me, ("unread", "read", "done"))]
        store.add_passed(me, held)
        store.set_accept(me, "members" if group is None else GROUP_ACCEPT + group)

    def act(self, action: str, name: str | None = None, note: str | None = None,
            group: str | None = None) -> dict[str, Any]:
        """One entry for the MCP ``gate`` tool: ``action`` is ``status``, ``on``,
        ``off``, ``pending``, ``join``, ``admit``, ``refuse`` or ``revoke`` (the last four
        name an agent; ``join`` also takes a ``note``; ``on``/``off`` a ``group``).
        Returns the gate's status after it, or for ``join`` the request sent."""
        if action in ("join", "admit", "refuse", "revoke") and not name:
            raise InvalidInput(f"action {action} needs the name of an agent")
        if action == "join":
            message = self.join(str(name), note or "")
            return {"request": message.id, "to": message.to[0]}
        if action in ("on", "off"):
            self.switch(action == "on", group)
        elif action == "admit":
            self.admit(str(name))
        elif action == "refuse":
            self.refuse(str(name))
        elif action == "revoke":
            self.revoke(str(name))
        elif action not in ("status", "pending"):
            raise InvalidInput(f"unknown action {action!r}: status, on, off, pending, join, "
                               "admit, refuse or revoke")
        return {**self.status(), "requests": self.pending()}

    def status(self) -> dict[str, Any]:
        """My gate in full: members are shown to the agent itself only."""
        me = self.box.agent
        accept = self.box.store.accept_of(me)
        group = group_of(accept)
        key = self._key(me)
        status: dict[str, Any] = {
            "agent": me, "accept": "members" if group else accept,
            "members": self.box.store.members(key),
            "pending": sorted(self.box.store.requests(key))}
        if group is not None:
            status["group"] = group
            status["group_agents"] = self.group(group)
        return status


class ManagedGate(Gate):
    """An agent's gate as the mailbox's owner manages it from ``mailslot web``'s settings
    page (:func:`mailslot.service.settings.managed_gate`).

    The person running the page owns the mailbox folder and could rewrite the gate's files
    anyway (and passes every gate as the config's ``owner``), so no agent credential is
    asked. Every change is still :class:`Gate`'s own code: the switch that records what
    the inbox already holds, admit telling the requester, refuse, revoke.
    """

    def _owner(self) -> str:
        return self.box.agent
