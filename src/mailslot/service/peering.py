"""Peering: this mailbox as a node, and the nodes it exchanges mail with over ssh.

``peer add NAME SSH_DEST`` is a git-remote-like record: the settings go in config.json
(``peers.NAME``), and the link is opened once to exchange node keys (the other node's
is pinned on first use; a changed key is refused until the owner removes the peer and
adds it again) and rosters. The other node pins this one the same way on that
connection, as a peer that connects to it. ``peer sync`` carries everything waiting
both ways now; the watcher does the same by itself (:mod:`mailslot.frontends.peer_watch`),
and ``peer serve`` is the other end of every link (:mod:`mailslot.frontends.peer_server`).

The rules for what arrives are in :mod:`.peer_mail`, for what leaves in
:mod:`.peer_routes`; the state behind them is :mod:`mailslot.peers.state`.
"""

from __future__ import annotations

import time

from ..core.addresses import check_node
from ..core.dates import datetime
from ..core.errors import InvalidInput, MailslotError, NotFound, Refused, StoreError
from .sending import Sending

TYPE_CHECKING = False
if TYPE_CHECKING:
    import threading
    from typing import Any

    from ..peers.carrier import Carrier
    from ..peers.nodes import NodeKey
    from ..peers.state import PeerState

INBOUND = "-"
"""``peer add NAME -``: a peer that connects here (this node has no way to reach it)."""
_OPTIONS = ("remote_store", "remote_mailslot", "ssh_command")
EXPIRE_SECONDS = 10.0
"""How often a carrier looks for mail that waited too long (each look reads the queue)."""


def _now() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")


class Peering(Sending):
    """A mailbox's peers: add, list, remove, sync; the two ends of a link."""

    _peers: PeerState | None = None

    @property
    def peer_state(self) -> PeerState:
        from ..peers.state import PeerState

        if self._peers is None:
            self._peers = PeerState(self.store)
        return self._peers

    @property
    def node(self) -> str:
        """This mailbox's node name."""
        from ..peers.nodes import node_name

        return node_name(self.config.raw)

    def node_key(self) -> NodeKey:
        """This node's key pair (made on first use)."""
        from ..peers.nodes import node_key

        return node_key(self.peer_state)

    def node_info(self) -> dict[str, Any]:
        record = self.peer_state.get("node", ())
        return {"node": self.node, "fingerprint": record.get("fingerprint")
                if isinstance(record, dict) else None}

    # The owner's commands ---------------------------------------------------------
    def add_peer(self, name: str, dest: str, **options: str | None) -> dict[str, Any]:
        """Record the peer ``name`` at ``dest`` (``-``: it connects here), exchanging
        node keys and rosters over one link; safe to run again."""
        from ..peers import peer_config as settings
        from ..peers import receipts
        from ..peers.link import check_destination, spawn
        from ..peers.nodes import encode
        from ..peers.protocol import Session

        name = check_node(name, "peer name")
        if name == self.node:
            raise InvalidInput(f"{name} is this node's own name (config.json node)")
        old = settings.peers(self.config.raw).get(name, {})
        wanted = {**{k: old.get(k) for k in _OPTIONS},
                  **{k: v for k, v in options.items() if v is not None}}
        if dest == INBOUND:
            self._forget_removed(name)
            self._configure(name, {k: v for k, v in wanted.items() if v is not None})
            return {"name": name, "ssh": None, "fingerprint": None, "roster": [],
                    "note": f"{name} is pinned when it first connects here"}
        wanted["ssh"] = check_destination(dest)
        key = self.node_key()
        link = spawn(wanted)
        try:
            session = Session(link)
            welcome = session.hello(self.node, encode(key.public),
                                    wanted.get("remote_store"), self.roster_for(name))
            record, new = self._pin(name, welcome, adding=True, dest=dest)
            session.bye()
        except MailslotError as exc:
            raise type(exc)(link.why(str(exc))) from None
        finally:
            link.close()
        self._configure(name, {k: v for k, v in wanted.items() if v is not None})
        receipts.start(self.store, self.peer_state, name)
        self._link(name, up=True)
        return {"name": name, "ssh": dest, "fingerprint": record["fingerprint"], "new": new,
                "roster": record["roster"], "node": self.node,
                "own_fingerprint": key.fingerprint}

    def remove_peer(self, name: str) -> dict[str, Any]:
        """Forget ``name`` as a peer: its settings go, its key stays pinned as removed
        (it may not connect again until it is added again), and mail waiting for it goes
        back to its senders."""
        from ..peers import outbox
        from ..peers import peer_config as settings

        name = check_node(name, "peer name")
        state = self.peer_state
        record = state.get("known", (name,))
        if name not in settings.peers(self.config.raw) and record is None:
            raise NotFound(f"no peer {name} (see mailslot peer list)")

        def change(raw: dict[str, Any]) -> bool:
            section = raw.get("peers")
            if isinstance(section, dict) and name in section:
                del section[name]
                return True
            return False

        self.store.update_config(change)
        self._config = None
        state.put("known", (name,), {**(record if isinstance(record, dict) else {}),
                                     "removed": _now()})
        bounced = outbox.expire(self.store, state, name, float("inf"),
                                f"{name} was removed as a peer")
        for space in ("links", "progress"):
            state.delete(space, (name,))
        return {"name": name, "removed": True, "bounced": bounced}

    def peer_list(self) -> list[dict[str, Any]]:
        """Every peer: its settings, pinned key, roster, link and what waits for it."""
        from ..peers import outbox
        from ..peers import peer_config as settings

        state = self.peer_state
        configured = settings.peers(self.config.raw)
        known = {key[0]: value for key, value in state.items("known").items()
                 if isinstance(value, dict) and not value.get("removed")}
        found = []
        for name in sorted(set(configured) | set(known)):
            entry, record = configured.get(name, {}), known.get(name, {})
            mail = [k for k in state.keys("outbox", (name,)) if not k[1].startswith("r-")]
            found.append({
                "name": name, "ssh": entry.get("ssh"),
                **{k: entry.get(k) for k in (*_OPTIONS, "may_send_to")},
                "fingerprint": record.get("fingerprint"), "pinned": record.get("pinned"),
                "roster": record.get("roster", []), "roster_at": record.get("roster_at"),
                "queued": len(mail), "queued_since": outbox.queued_since(state, name),
                "link": state.get("links", (name,))})
        return found

    def sync_peers(self, name: str | None = None) -> list[dict[str, Any]]:
        """Carry what waits, both ways, with every peer this node reaches (or ``name``)."""
        from ..peers import peer_config as settings

        reachable = settings.reachable(self.config.raw)
        if name is not None:
            name = check_node(name, "peer name")
            if name not in reachable:
                raise InvalidInput(f"{name} is no peer this node reaches (see mailslot peer "
                                   "list; one added with - connects here instead)")
            reachable = {name: reachable[name]}
        done = []
        for node in sorted(reachable):
            try:
                done.append({"name": node, "ok": True, "moved": self.carry(node)})
            except MailslotError as exc:
                done.append({"name": node, "ok": False, "error": str(exc)})
        return done

    # One link, from this side -----------------------------------------------------
    def carry(self, node: str, *, linger: float = 0.0,
              stop: threading.Event | None = None) -> int:
        """Open a link to ``node``, carry both ways (then keep it live for ``linger``
        seconds of quiet), and close it; how many envelopes moved. The link's state is
        kept for ``status`` and ``who``; a failure raises, saying why."""
        from ..peers import peer_config as settings
        from ..peers.link import spawn
        from ..peers.nodes import encode
        from ..peers.protocol import Session

        entry = settings.reachable(self.config.raw).get(node)
        if entry is None:
            raise InvalidInput(f"{node} is no peer this node reaches")
        self.expire_peer_mail(every=EXPIRE_SECONDS)
        key = self.node_key()
        try:
            link = spawn(entry)
        except MailslotError as exc:
            self._link(node, up=False, error=str(exc))
            raise
        try:
            session = Session(link)
            welcome = session.hello(self.node, encode(key.public), entry.get("remote_store"),
                                    self.roster_for(node))
            self._pin(node, welcome, adding=False, dest=str(entry.get("ssh")))
            self._link(node, up=True)
            moved = self.carrier(node, key).run(session, linger=linger, stop=stop)
            session.bye()
        except MailslotError as exc:
            why = link.why(str(exc))
            self._link(node, up=False, error=why)
            raise type(exc)(why) from None
        finally:
            link.close()
        self._link(node, up=True)
        return moved

    def carrier(self, node: str, key: NodeKey | None = None) -> Carrier:
        """This node's side of a link to ``node``."""
        from ..peers.carrier import Carrier
        from .peer_mail import Taking

        state = self.peer_state
        return Carrier(self.store, state, self.node, key or self.node_key(), node,
                       lambda sender, envelopes: Taking(self, state, self.node, sender)(
                           envelopes))

    _expired_at = float("-inf")

    def expire_peer_mail(self, every: float = 0.0) -> int:
        """Send back mail that waited longer than ``peer_bounce_hours`` for its peer (at
        most once ``every`` seconds)."""
        from ..peers import outbox
        from ..peers import peer_config as settings

        if time.monotonic() - self._expired_at < every:
            return 0
        self._expired_at = time.monotonic()
        limit = settings.bounce_seconds(self.config.raw)
        state = self.peer_state
        gone = 0
        for (node,) in {key[:1] for key in state.keys("outbox")}:
            link = state.get("links", (node,))
            said = f" (link down since {link.get('since')}: {link.get('error')})" \
                if isinstance(link, dict) and not link.get("up") else ""
            gone += outbox.expire(self.store, state, node, time.time() - limit,
                                  f"it waited {limit / 3600:g} h for a link to {node}{said}")
        return gone

    # The other end of a link ------------------------------------------------------
    def welcome_peer(self, hello: dict[str, Any]) -> tuple[Served, dict[str, Any]]:
        """Take a client node's hello: pin it on first use, refuse a changed key, a
        removed peer or a name taken; the welcome to answer with."""
        from ..peers import receipts
        from ..peers.nodes import decode, encode, fingerprint

        try:
            node = check_node(hello.get("node"), "the other node's name")
            offered = decode(hello.get("key"))
        except InvalidInput as exc:
            raise Refused(str(exc)) from None
        here = self.node
        if node == here:
            raise Refused(f"both nodes are named {here}: give one another name "
                          "(mailslot config set node NAME)")
        self._check_inbound(node, offered)
        state = self.peer_state
        record = state.get("known", (node,))
        roster = _names(hello.get("roster"))
        if record is None:
            state.put("known", (node,), {"key": encode(offered),
                                         "fingerprint": fingerprint(offered),
                                         "pinned": _now(), "via": "inbound",
                                         "roster": roster, "roster_at": _now()})
            self._configure(node, {})
            receipts.start(self.store, state, node)
        else:
            state.put("known", (node,), {**record, "roster": roster, "roster_at": _now()})
        self._link(node, up=True)
        key = self.node_key()
        return Served(self, node, key), {"type": "welcome", "version": 1, "node": here,
                                         "key": encode(key.public),
                                         "roster": self.roster_for(node)}

    def _check_inbound(self, node: str, offered: bytes) -> None:
        """Refuse a client whose key is pinned for another node, or that this node's
        owner removed, or whose key is not the one pinned for it."""
        from ..peers.nodes import encode, fingerprint

        mine = encode(offered)
        for (other,), record in self.peer_state.items("known").items():
            if not isinstance(record, dict):
                continue
            if other != node:
                if record.get("key") == mine and not record.get("removed"):
                    raise Refused(f"this key is node {other}'s; a node keeps its name")
            elif record.get("removed"):
                raise Refused(f"{self.node}'s owner removed {node} as a peer; they add it "
                              f"again with: mailslot peer add {node} SSH_DEST (or -)")
            elif record.get("key") != mine:
                raise Refused(f"{self.node} has {node}'s node key pinned as "
                              f"{record.get('fingerprint')}; this link offers "
                              f"{fingerprint(offered)}: refused (if {node} was set up "
                              f"again, {self.node}'s owner runs mailslot peer remove {node},"
                              f" then {node} adds {self.node} again)")

    def roster_for(self, node: str) -> list[str]:
        """This node's agents that ``node`` may send to, for its ``who``."""
        from ..peers import peer_config as settings
        from .recipients import known

        allowed = settings.may_send_to(self.config.raw, node)
        names = known(self.store, self.config)
        return [n for n in names if allowed is None or n in allowed]

    # What the commands keep -------------------------------------------------------
    def _pin(self, name: str, welcome: dict[str, Any], *, adding: bool, dest: str
             ) -> tuple[dict[str, Any], bool]:
        """Check the welcome of ``name``: its node name, and its key against the one
        pinned (first use pins it, when ``adding``); keep its roster."""
        from ..peers.nodes import decode, encode, fingerprint

        if welcome.get("node") != name:
            raise Refused(f"the node at {dest} calls itself {welcome.get('node')!r}, not "
                          f"{name}: add it as that name")
        try:
            offered = decode(welcome.get("key"))
        except InvalidInput:
            raise Refused(f"{name} offered no node key") from None
        state = self.peer_state
        record = state.get("known", (name,))
        pinned = record if isinstance(record, dict) and not record.get("removed") else None
        if pinned is None and not adding:
            raise Refused(f"{name}'s key is not pinned here: mailslot peer add {name} "
                          f"{dest}")
        if pinned is not None and pinned.get("key") != encode(offered):
            raise Refused(f"{name}'s node key changed: pinned {pinned.get('fingerprint')}, "
                          f"offered {fingerprint(offered)}; nothing was sent (if {name} was "
                          f"set up again: mailslot peer remove {name}, then peer add again)")
        kept = {**(pinned or {"pinned": _now()}), "key": encode(offered),
                "fingerprint": fingerprint(offered), "roster": _names(welcome.get("roster")),
                "roster_at": _now()}
        state.put("known", (name,), kept)
        return kept, pinned is None

    def _configure(self, name: str, entry: dict[str, Any]) -> None:
        def change(raw: dict[str, Any]) -> bool:
            section = raw.setdefault("peers", {})
            if not isinstance(section, dict):
                raise StoreError("config.json: peers must be an object")
            merged = {**(section.get(name) or {}), **entry}
            if section.get(name) == merged:
                return False
            section[name] = merged
            return True

        self.store.update_config(change)
        self._config = None

    def _forget_removed(self, name: str) -> None:
        record = self.peer_state.get("known", (name,))
        if isinstance(record, dict) and record.get("removed"):
            self.peer_state.delete("known", (name,))

    def _link(self, node: str, *, up: bool, error: str | None = None) -> None:
        """Keep how the link to ``node`` went: ``since`` when it last changed."""
        state = self.peer_state
        old = state.get("links", (node,))
        old = old if isinstance(old, dict) else {}
        now = _now()
        state.put("links", (node,), {
            "up": up, "since": old.get("since") if old.get("up") == up else now,
            "error": None if up else error, "tried": now,
            "last_ok": now if up else old.get("last_ok")})


def _names(raw: object) -> list[str]:
    from ..core.names import is_valid_name

    return sorted({n for n in raw if isinstance(n, str) and is_valid_name(n)}) \
        if isinstance(raw, list) else []


class Served:
    """The server's side of one link (a :class:`~mailslot.peers.protocol.Host`)."""

    def __init__(self, box: Peering, node: str, key: NodeKey) -> None:
        self.box, self.node = box, node
        self.carrier = box.carrier(node, key)
        self.given: dict[str, tuple[str, dict[str, Any]]] = {}

    def take(self, envelopes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return self.carrier.take(envelopes)

    def give(self, most: int) -> list[dict[str, Any]]:
        batch = self.carrier.outgoing(most)
        self.given.update(batch.items)
        return batch.envelopes

    def acked(self, results: list[dict[str, Any]]) -> None:
        from ..peers import outbox

        for result in results:
            if not isinstance(result, dict) or result.get("outcome") not in (
                    "stored", "duplicate", "refused"):
                continue
            found = self.given.pop(str(result.get("eid")), None)
            if found is not None:
                outbox.settle(self.box.store, self.box.peer_state, self.node, found[0],
                              found[1], result)

    def roster(self) -> list[str]:
        return self.box.roster_for(self.node)
