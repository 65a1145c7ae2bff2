"""Peers without ssh: addresses and ids across nodes, the node key, the peer state on
both stores, and what ``peer serve`` refuses (forged, tampered, replayed envelopes),
driven through its real standard input and output."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from mailslot import FileStore, Mailbox
from mailslot.backends import open_store
from mailslot.core.addresses import check_node, from_host, id_seen_from, seen_from
from mailslot.core.errors import InvalidInput, UnsafePath
from mailslot.core.ids import is_id, new_id
from mailslot.core.message import Message, to_bytes
from mailslot.peers.envelope import Rejected, new_eid, open_envelope, seal, sealed_at
from mailslot.peers.frames import WireError
from mailslot.peers.link import Link, local
from mailslot.peers.nodes import NodeKey, encode, node_key
from mailslot.peers.protocol import Session
from mailslot.peers.state import PeerState
from mailslot.wake.claims import Queue
from pgcluster import Cluster
from sshlab import MAILSLOT
from support import put_config


@pytest.mark.parametrize("raw", ["1a2b3c4d", "deadbeef", "cafe", "1a2b-3c4d", "0000"])
def test_a_node_name_that_reads_as_a_session_id_is_refused(raw: str) -> None:
    with pytest.raises(InvalidInput, match="could be read as a session id"):
        check_node(raw)


@pytest.mark.parametrize("raw", ["b", "laptop", "ci-box", "abc", "node-3f2a9c1b"])
def test_a_node_name_is_a_word_with_a_letter_after_f(raw: str) -> None:
    assert check_node(raw.upper()) == raw


def test_a_node_name_made_from_a_host_name_is_always_usable() -> None:
    assert from_host("Laptop.local") == "laptop"
    assert from_host("3f2a9c1b7d4e") == "node-3f2a9c1b7d4e"  # a container's host name
    assert from_host("my_box") == "my-box"
    check_node(from_host("3f2a9c1b7d4e"))


def test_each_node_writes_the_same_message_from_where_it_stands() -> None:
    theirs = new_id(_WHEN, "codex", ["claude@a", "zed@c", "gemini"])
    assert is_id(theirs) and "_codex_to_claude@a+2_" in theirs
    mine = id_seen_from(theirs, "b", "a")
    assert is_id(mine) and "_codex@b_to_claude+2_" in mine
    assert id_seen_from(mine, "a", "b") == theirs  # and back
    assert [seen_from(n, "b", "a") for n in ("codex", "claude@a", "zed@c")] == \
        ["codex@b", "claude", "zed@c"]


def test_an_id_holds_at_most_one_node_per_party() -> None:
    good = new_id(_WHEN, "codex@b", ["claude"])
    assert is_id(good)
    for bad in (good.replace("codex@b", "codex@b@c"), good.replace("codex@b", "@b"),
                good.replace("codex@b", "codex@"), good.replace("codex@b", "codex@B")):
        assert not is_id(bad), bad


def test_the_node_key_is_0600_outside_the_mailbox_and_made_once(root: Path,
                                                                 home: Path) -> None:
    state = PeerState(FileStore(root))
    first = node_key(state)
    again = node_key(PeerState(FileStore(root)))
    assert again.public == first.public
    [pem] = (home / ".config" / "mailslot" / "nodes").iterdir()
    assert stat.S_IMODE(pem.stat().st_mode) == 0o600
    assert b"PRIVATE KEY" in pem.read_bytes()
    held = [p for p in root.rglob("*") if p.is_file() and b"PRIVATE" in p.read_bytes()]
    assert held == []  # the mailbox holds the public key only


def test_a_node_key_others_may_read_is_refused(root: Path, home: Path) -> None:
    node_key(PeerState(FileStore(root)))
    [pem] = (home / ".config" / "mailslot" / "nodes").iterdir()
    pem.chmod(0o644)
    with pytest.raises(Exception, match="readable by others"):
        node_key(PeerState(FileStore(root)))


# The peer state, on every store ---------------------------------------------------
@pytest.fixture(params=["files", "postgresql", "memory"])
def state(request: pytest.FixtureRequest, root: Path) -> Iterator[PeerState]:
    if request.param == "files":
        yield PeerState(FileStore(root))
        return
    if request.param == "memory":
        yield PeerState(open_store(f"memory://peers-{os.getpid()}-{id(request)}"))
        return
    cluster: Cluster = request.getfixturevalue("pg_cluster")
    store = open_store(cluster.new_database())
    store.init()
    yield PeerState(store)


def test_the_peer_state_keeps_records_by_key_on_every_store(state: PeerState) -> None:
    mid = new_id(_WHEN, "claude", ["codex@b"])
    assert state.get("outbox", ("b", mid)) is None
    assert state.add("outbox", ("b", mid), {"n": 1})
    assert not state.add("outbox", ("b", mid), {"n": 2})  # add never replaces
    state.put("known", ("b",), {"key": "k"})
    state.put("known", ("b",), {"key": "k2"})
    assert state.get("outbox", ("b", mid)) == {"n": 1}
    assert state.keys("outbox") == [("b", mid)] == state.keys("outbox", ("b",))
    assert state.items("known") == {("b",): {"key": "k2"}}
    assert state.delete("outbox", ("b", mid)) and not state.delete("outbox", ("b", mid))
    assert state.keys("outbox", ("b",)) == []


@pytest.mark.parametrize("key", [("../b",), (".b",), ("b/c",), ("1a2b3c4d",), ("",)])
def test_a_key_that_could_leave_its_folder_is_refused(state: PeerState,
                                                      key: tuple[str, ...]) -> None:
    with pytest.raises(Exception, match="not safe as a part"):
        state.put("known", key, {})


def test_a_planted_link_in_the_peer_state_is_never_followed(root: Path,
                                                           tmp_path: Path) -> None:
    state = PeerState(FileStore(root))
    state.put("known", ("b",), {"key": "k"})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.rename(root / "peers" / "known", tmp_path / "moved")
    (root / "peers" / "known").symlink_to(elsewhere)
    with pytest.raises(UnsafePath):  # as the next process finds it
        PeerState(FileStore(root)).put("known", ("c",), {"key": "x"})
    assert list(elsewhere.iterdir()) == []


# What peer serve refuses ---------------------------------------------------------------
_WHEN = __import__("datetime").datetime(2026, 12, 6, 10, 0, tzinfo=__import__("datetime").UTC)


class Client:
    """A node ``a`` talking to this test's mailbox (node ``b``) through a real
    ``mailslot peer serve``, with a key it holds itself."""

    def __init__(self, key: NodeKey) -> None:
        self.key = key
        self.link: Link = local([str(MAILSLOT), "peer", "serve"])
        self.session = Session(self.link)
        try:
            self.welcome = self.session.hello("a", encode(key.public), None, ["claude"])
        except BaseException:
            self.link.close()
            raise

    def mail(self, to: str = "codex@b", body: str = "hello", **change: Any
             ) -> dict[str, Any]:
        message = Message(new_id(_now(), "claude", [to]), _now().isoformat(), "claude",
                          (to,), "hi", body)
        fields = {"kind": "mail", "from": "a", "to": "b", "eid": new_eid(),
                  "at": sealed_at(_now().timestamp()),
                  "message": to_bytes(message).decode(), **change}
        return seal(fields, self.key)

    def push(self, *envelopes: dict[str, Any]) -> list[dict[str, Any]]:
        return self.session.push(list(envelopes))


def _now() -> Any:
    from mailslot.core.dates import UTC, datetime

    return datetime.now(UTC)


@pytest.fixture
def served(root: Path) -> Iterator[Callable[[], Client]]:
    """This test's mailbox as node ``b``, with ``codex`` in it; clients of node ``a``."""
    store = FileStore(root)
    store.init()
    put_config(store, {"node": "b"})
    key = NodeKey(Ed25519PrivateKey.generate())
    made: list[Client] = []

    def client() -> Client:
        made.append(Client(key))
        return made[-1]

    yield client
    for one in made:
        one.link.close()


def _held(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "agents").rglob("*.md")) \
        if (root / "agents").exists() else []


def _refusals(root: Path) -> list[str]:
    log = root / "log" / "events.jsonl"
    import json

    return [json.loads(line)["reason"] for line in log.read_text().splitlines()
            if '"peer_refused"' in line or '"peer_replay"' in line]


def test_a_signed_envelope_is_stored_as_mail_from_its_node(served: Callable[[], Client],
                                                          root: Path) -> None:
    client = served()
    assert client.welcome["node"] == "b"
    [result] = client.push(client.mail())
    assert result["outcome"] == "stored"
    [held] = _held(root)
    assert "_claude@a_to_codex_" in held
    text = (next((root / "agents" / "codex" / "new").iterdir())).read_text()
    assert "from: claude@a\n" in text and "- codex\n" in text


def test_a_forged_envelope_is_refused_and_nothing_is_stored(served: Callable[[], Client],
                                                           root: Path) -> None:
    client = served()
    forger = NodeKey(Ed25519PrivateKey.generate())
    forged = seal({k: v for k, v in client.mail().items() if k not in ("sig", "v")}, forger)
    unsigned = {k: v for k, v in client.mail().items() if k != "sig"}
    results = client.push(forged, unsigned)
    assert [r["outcome"] for r in results] == ["refused", "refused"]
    assert "does not verify" in results[0]["reason"] and results[1]["reason"] == "unsigned"
    assert _held(root) == []
    assert len(_refusals(root)) == 2


def test_a_tampered_envelope_is_refused_and_nothing_is_stored(served: Callable[[], Client],
                                                             root: Path) -> None:
    client = served()
    good = client.mail(body="pay 10")
    tampered = {**good, "message": good["message"].replace("pay 10", "pay 99")}
    readdressed = {**client.mail(), "to": "c"}
    results = client.push(tampered, readdressed)
    assert [r["outcome"] for r in results] == ["refused", "refused"]
    assert all("does not verify" in r["reason"] for r in results)
    assert _held(root) == []


def test_a_replayed_envelope_is_refused_and_stores_nothing_again(
        served: Callable[[], Client], root: Path) -> None:
    client = served()
    envelope = client.mail()
    assert client.push(envelope)[0]["outcome"] == "stored"
    assert client.push(envelope)[0]["outcome"] == "duplicate"
    box = Mailbox.open(str(root), "codex")
    [item] = box.inbox()
    box.done([item.message.id])
    box.remove_agent("codex")  # the copy is gone: the envelope's id still knows it
    assert client.push(envelope)[0]["outcome"] == "duplicate"
    assert _held(root) == []
    assert any("a replay" in why for why in _refusals(root))


def test_an_envelope_older_than_the_window_is_refused(served: Callable[[], Client],
                                                      root: Path) -> None:
    client = served()
    old = client.mail(at="2026-01-01T00:00:00+00:00")
    [result] = client.push(old)
    assert result["outcome"] == "refused" and "a replay" in result["reason"]
    assert _held(root) == []


def test_a_node_speaks_only_for_its_own_agents(served: Callable[[], Client],
                                               root: Path) -> None:
    client = served()
    mine = Message(new_id(_now(), "codex", ["codex@b"]), _now().isoformat(), "codex",
                   ("codex@b",), "as b's own", "x")
    third = Message(new_id(_now(), "zed@c", ["codex@b"]), _now().isoformat(), "zed@c",
                    ("codex@b",), "as c's", "x")
    spoofed = mine.replace(sender="claude")  # a header naming another than its id
    results = client.push(*(client.mail(message=to_bytes(m).decode())
                            for m in (third, spoofed)))
    assert [r["outcome"] for r in results] == ["refused", "refused"]
    assert all("speak only for its own agents" in r["reason"] for r in results)
    assert _held(root) == []


def test_a_second_key_for_a_pinned_node_is_refused(served: Callable[[], Client]) -> None:
    served()
    with pytest.raises(Exception, match="pinned"):
        Client(NodeKey(Ed25519PrivateKey.generate()))


def test_a_frame_that_is_not_json_ends_the_link(served: Callable[[], Client]) -> None:
    client = served()
    os.write(client.link.write_fd, (5).to_bytes(4, "big") + b"nope!")
    with pytest.raises(WireError):
        client.session.roster()


def test_open_envelope_checks_every_field() -> None:
    key = NodeKey(Ed25519PrivateKey.generate())
    base = {"kind": "mail", "from": "a", "to": "b", "eid": new_eid(),
            "at": sealed_at(_now().timestamp()), "message": "x"}
    good = seal(base, key)
    opened = open_envelope(good, pinned=key.public, sender="a", me="b",
                           now=_now().timestamp(), window=3600)
    assert opened["message"] == "x"
    for bad, why in ((seal({**base, "kind": "x"}, key), "unknown kind"),
                     (seal({**base, "eid": "zz"}, key), "no envelope id"),
                     (seal({**base, "to": "c"}, key), "not b"),
                     (good, "from"),):
        sender = "c" if why == "from" else "a"
        with pytest.raises(Rejected, match=why):
            open_envelope(bad, pinned=key.public, sender=sender, me="b",
                          now=_now().timestamp(), window=3600)


def _peer_b(root: Path) -> FileStore:
    """This test's mailbox as node ``a``, with ``b`` a peer it reaches (no link opened)."""
    store = FileStore(root)
    store.init()
    put_config(store, {"node": "a", "peers": {"b": {"ssh": "b-host"}}})
    return store


def test_a_send_to_a_peer_and_a_local_agent_is_kept_for_each(root: Path) -> None:
    _peer_b(root)
    sent = Mailbox.open(str(root), "claude").send(["gemini", "codex@b"], "both", "x",
                                                  new=True)
    assert "_claude_to_gemini+1_" in sent.id and sent.to == ("gemini", "codex@b")
    assert (root / "agents" / "gemini" / "new" / f"{sent.id}.md").exists()
    assert (root / "peers" / "outbox" / "b" / f"{sent.id}.json").exists()
    status = Mailbox.open(str(root), "claude").status(sent.id[-8:])
    rungs = {r.agent: r.rung for r in status.recipients}
    assert rungs == {"gemini": "stored", "codex@b": "queued"}
    [codex] = [r for r in status.recipients if r.agent == "codex@b"]
    assert codex.waiting and codex.waiting.startswith("queued for b: not carried yet")
    assert [s.message.id for s in Mailbox.open(str(root), "claude").sent()] == [sent.id]


def test_a_send_that_fails_keeps_nothing_for_the_peer(root: Path,
                                                     monkeypatch: pytest.MonkeyPatch
                                                     ) -> None:
    store = _peer_b(root)
    from mailslot.backends.files.file_store import FileStore as Files

    def full(self: object, message: Message, recipients: object) -> None:
        raise StoreError("the disk is full")

    from mailslot.core.errors import StoreError

    monkeypatch.setattr(Files, "deliver", full)
    with pytest.raises(StoreError):
        Mailbox(store, _as("claude")).send(["gemini", "codex@b"], "both", "x", new=True)
    assert not list((root / "peers" / "outbox").rglob("*.json"))
    assert not list((root / "peers" / "sent").rglob("*.json"))


def _as(agent: str) -> Any:
    from mailslot.access.identity import Identity

    return Identity(agent, "--agent")


def test_a_child_agent_may_not_send_to_a_peer(root: Path) -> None:
    from mailslot.core.errors import Refused

    _peer_b(root)
    with pytest.raises(Refused, match="child agent"):
        Mailbox.open(str(root), "tester", peer_of="claude").send("codex@b", "x", "y")
    assert not (root / "peers" / "outbox").exists()


def test_an_address_of_no_peer_stays_a_session_prefix(root: Path) -> None:
    from mailslot.core.errors import Refused

    _peer_b(root)
    with pytest.raises(Refused, match="has no running session zz99"):
        Mailbox.open(str(root), "claude").send("codex@zz99", "x", "y")


def test_mail_from_a_peer_wakes_its_recipient_as_local_mail_does(
        served: Callable[[], Client], root: Path) -> None:
    store = FileStore(root)
    put_config(store, {"node": "b", "agents": {"codex": {
        "wake_on_mail": True, "wake_method": "command", "command": ["/bin/true", "{id}"]}}})
    client = served()
    [result] = client.push(client.mail())
    assert result["outcome"] == "stored"
    [entry] = Queue(store).pending("codex")
    assert "_claude@a_to_codex_" in entry.message_id


def test_mail_too_large_for_a_frame_goes_back_at_once(root: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from mailslot.peers import carrier

    _peer_b(root)
    monkeypatch.setattr(carrier, "MAX_FRAME", 8192)
    box = Mailbox.open(str(root), "claude")
    big = box.send("codex@b", "big", "x" * 5000)
    small = box.send("codex@b", "small", "x")
    batch = box.carrier("b").outgoing()
    assert [e["eid"] for e in batch.envelopes] == [
        json.loads((root / "peers" / "outbox" / "b" / f"{small.id}.json").read_text())["eid"]]
    assert not (root / "peers" / "outbox" / "b" / f"{big.id}.json").exists()
    [notice] = Mailbox.open(str(root), "claude").inbox()
    assert notice.message.subject == "undelivered: your message to codex@b"
    assert "too large to carry" in Mailbox.open(str(root), "claude").read(
        notice.message.id).message.body


def test_mail_from_a_peer_counts_against_the_byte_budgets(served: Callable[[], Client],
                                                          root: Path) -> None:
    """A remote sender's mail puts its bytes into this node's agents' contexts as local
    mail does: the owner's byte budget holds it too."""
    put_config(FileStore(root), {"node": "b", "governor": {"agent_bytes_per_hour": 10_000}})
    client = served()
    results = client.push(client.mail(body="x" * 3000), client.mail(body="y" * 3000))
    assert [r["outcome"] for r in results] == ["stored", "refused"]
    assert "too many bytes from claude@a" in results[1]["reason"]
    assert len(_held(root)) == 1
