"""The store contract: what every backend of :class:`mailslot.store.Store` must do.

Every test takes ``backend``, parametrised over the backends mailslot has: the file
store, PostgreSQL (a real server: a throwaway cluster, see tests/pgcluster.py) and the
store in memory. Each backend is a :class:`Backend` subclass that knows how to break it:
plant a link, refuse a permission, fill the disk. The tests themselves use the store's
methods only (and the wake queue's, :mod:`mailslot.wake.claims`, built on them).

The tests are grouped by the groups of primitives a backend writes
(:mod:`mailslot.store.primitives`) and the roles built on them (:mod:`mailslot.store.roles`):
one class per group or role, its ``role`` naming it, and a class for the errors every
role shares. The last tests check the shape itself: every method of ``Store`` is a
primitive or belongs to exactly one role, every group and role has its class here, each
backend writes every primitive, and the memory store writes nothing else.
"""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mailslot.backends import open_store
from mailslot.backends.files.file_store import FileStore
from mailslot.core.errors import IdTaken, NotFound, StoreError, Unreadable, UnsafePath
from mailslot.core.message import Message
from mailslot.store import AgentRecord, Store, WakeEntry, primitives, roles
from mailslot.store.namespaces import NAMESPACES, NOTIFY_QUEUES
from mailslot.wake.claims import Queue, notifier_queue
from pgcluster import Cluster
from support import fail_os, finish, make_message, put_config, worker


class Backend:
    """A store under test, and the ways to break it that only its kind knows."""

    store: Store
    location: str
    kind: str
    folder: str | None
    """What the store must say it is: its kind, and the folder it is (if one)."""
    watches = True
    """Whether it can tell of changes (``watch``, ``watch_mail``) here: the file store
    through inotify (watchdog, a dependency), PostgreSQL through LISTEN/NOTIFY. A
    backend that cannot says ``None`` and callers poll; one that can must not."""
    processes = True
    """Whether other processes share it (by its location): a store in memory is one
    process's."""

    def plant_link(self, agent: str) -> None:
        """Make ``agent``'s unread mail lead somewhere mailslot must not follow."""
        raise NotImplementedError

    def deny(self, monkeypatch: pytest.MonkeyPatch, agent: str) -> None:
        """Make the backend refuse writes to ``agent``'s mail (permission denied)."""
        raise NotImplementedError

    def fill(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Make the backend's disk full."""
        raise NotImplementedError

    def corrupt(self, agent: str, message_id: str) -> None:
        """Store garbage as ``agent``'s unread message ``message_id``."""
        raise NotImplementedError


class Files(Backend):
    def __init__(self, root: Path, tmp: Path) -> None:
        self.root, self.tmp = root, tmp
        self.location = str(root)
        self.store = FileStore(root)
        self.kind, self.folder = "files", str(root)

    def plant_link(self, agent: str) -> None:
        box = self.root / "agents" / agent
        box.mkdir(parents=True, exist_ok=True, mode=0o700)
        (self.tmp / "elsewhere").mkdir(exist_ok=True)
        (box / "new").symlink_to(self.tmp / "elsewhere")

    def deny(self, monkeypatch: pytest.MonkeyPatch, agent: str) -> None:
        for call in ("link", "mkdir", "open", "rename"):
            fail_os(monkeypatch, call, f"/agents/{agent}/", errno.EACCES)

    def fill(self, monkeypatch: pytest.MonkeyPatch) -> None:
        for call in ("link", "mkdir"):
            fail_os(monkeypatch, call, "", errno.ENOSPC)
        monkeypatch.setattr(os, "write", _full_disk)  # takes a descriptor, not a path

    def corrupt(self, agent: str, message_id: str) -> None:
        folder = self.root / "agents" / agent / "new"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{message_id}.md").write_bytes(b"---\nnot: [a message\n")
        (folder / f"{message_id}.md").chmod(0o600)


def _full_disk(fd: int, data: object) -> int:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


class Faults:
    """A fault the database raises by itself, switched by setting an attribute, so a
    ``monkeypatch`` undoes it like any other: a trigger raising ``sqlstate`` on writes."""

    def __init__(self, cluster: Cluster, database: str, sqlstate: str, tables: list[str],
                 only_agent: str | None = None) -> None:
        self.cluster, self.database, self.sqlstate = cluster, database, sqlstate
        self.tables, self.only_agent = tables, only_agent
        self._on = False

    @property
    def on(self) -> bool:
        return self._on

    @on.setter
    def on(self, value: bool) -> None:
        name = f"fault_{self.sqlstate}"
        if value:
            test = (f"NEW.agent = '{self.only_agent}'" if self.only_agent else "true")
            sql = [f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                   f"IF {test} THEN RAISE EXCEPTION 'refused by the test' USING ERRCODE = "
                   f"'{self.sqlstate}'; END IF; RETURN NEW; END $$"]
            sql += [f"CREATE TRIGGER {name} BEFORE INSERT OR UPDATE ON {t} FOR EACH ROW "
                    f"EXECUTE FUNCTION {name}()" for t in self.tables]
        else:
            sql = [f"DROP FUNCTION {name}() CASCADE"]
        for statement in sql:
            self.cluster.admin(statement, self.database)
        self._on = value


class Postgres(Backend):
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.location = cluster.new_database()
        self.database = self.location.rsplit("/", 1)[1]
        self.store = open_store(self.location)
        self.kind, self.folder = "postgresql", None

    def plant_link(self, agent: str) -> None:
        pytest.skip("a database has no links to plant; its rows cannot lead elsewhere")

    def deny(self, monkeypatch: pytest.MonkeyPatch, agent: str) -> None:
        fault = Faults(self.cluster, self.database, "42501", ["mail"], only_agent=agent)
        monkeypatch.setattr(fault, "on", True)

    def fill(self, monkeypatch: pytest.MonkeyPatch) -> None:
        fault = Faults(self.cluster, self.database, "53100", ["mail", "config", "seen"])
        monkeypatch.setattr(fault, "on", True)

    def corrupt(self, agent: str, message_id: str) -> None:
        self.store.exists() or put_config(self.store, {})  # the schema, made by first use
        self.store.load_config()
        import psycopg

        with psycopg.connect(self.location, autocommit=True) as conn:
            conn.execute("INSERT INTO mail VALUES (%s, %s, 'unread', %s)",
                         (agent, message_id, b"---\nnot: [a message\n"))


class Memory(Backend):
    """A store in this process's memory: nothing to plant, deny or fill, and no other
    process to share it with."""

    watches = processes = False

    def __init__(self, name: str) -> None:
        self.location = f"memory://{name}"
        self.store = open_store(self.location)
        self.kind, self.folder = "memory", None

    def plant_link(self, agent: str) -> None:
        pytest.skip("memory has no links to plant")

    def deny(self, monkeypatch: pytest.MonkeyPatch, agent: str) -> None:
        pytest.skip("memory has no permissions to refuse")

    def fill(self, monkeypatch: pytest.MonkeyPatch) -> None:
        pytest.skip("memory has no disk to fill")

    def corrupt(self, agent: str, message_id: str) -> None:
        self.store._box.mail.setdefault(agent, {})[message_id] = (  # type: ignore[attr-defined]
            b"---\nnot: [a message\n", "unread")


BACKENDS = ["files", "postgres", "memory"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, root: Path, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "files":
        yield Files(root, tmp_path)
    elif request.param == "memory":
        yield Memory(f"{request.node.name}-{id(request)}")
    else:
        running = Postgres(request.getfixturevalue("pg_cluster"))
        yield running
        running.store.close()


@pytest.fixture
def store(backend: Backend) -> Store:
    return backend.store


def message(n: int = 0, to: tuple[str, ...] = ("gemini",), sender: str = "claude") -> Message:
    return make_message(sender=sender, to=to, subject=f"s{n}", body=f"body {n}", n=n)


class TestLifecycle:
    """Where the store is, what it is, whether it exists."""

    role = "Lifecycle"

    def test_open_store_gives_the_same_mailbox(self, backend: Backend) -> None:
        backend.store.deliver(message(), ["gemini"])
        again = open_store(backend.location)
        assert again.location == backend.store.location and again.exists()
        assert again.entries("gemini", ["unread"]) == backend.store.entries("gemini", ["unread"])

    def test_a_store_names_its_kind_and_the_folder_it_is(self, backend: Backend) -> None:
        """What a backup asks a store instead of its class: the kind its manifest records,
        and the folder (in docs/format.md's layout) a restore may move a backup into."""
        store = backend.store
        m = message()
        store.deliver(m, ["gemini"])
        assert (store.kind, store.folder) == (backend.kind, backend.folder)
        if store.folder is not None:
            kept = os.path.join(store.folder, "agents", "gemini", "new", f"{m.id}.md")
            assert os.path.isfile(kept)


class TestMail:
    """Directed mail: delivered all or nothing, loaded, listed, moved forward only."""

    role = "Mail"

    def test_deliver_load_and_state(self, store: Store) -> None:
        assert not store.exists() or store.agent_names() == []
        m = message(to=("gemini", "codex"))
        store.deliver(m, ["gemini", "codex"])
        assert store.exists() and store.agent_names() == ["codex", "gemini"]
        for agent in ("gemini", "codex"):
            assert store.load(agent, m.id) == (m, "unread")
            assert store.load(agent, m.id, header_only=True)[0] == m.without_body()
            assert store.state_of(agent, m.id) == "unread"
        assert store.state_of("sarah", m.id) is None
        assert store.path_of("gemini", m.id) is not None
        with pytest.raises(NotFound):
            store.load("sarah", m.id)

    def test_entries_list_every_state_and_nothing_else(self, store: Store) -> None:
        ms = [message(n) for n in range(3)]
        for m in ms:
            store.deliver(m, ["gemini"])
        store.move("gemini", ms[1].id, "read")
        store.move("gemini", ms[2].id, "done")
        assert sorted(store.entries("gemini", ["unread", "read", "done"])) == sorted(
            [(ms[0].id, "unread"), (ms[1].id, "read"), (ms[2].id, "done")])
        assert store.entries("gemini", ["read"]) == [(ms[1].id, "read")]
        assert store.entries("nobody", ["unread"]) == []

    def test_ids_sort_by_time_so_the_newest_is_the_largest(self, store: Store) -> None:
        ms = [message(n) for n in (3, 1, 2)]
        for m in ms:
            store.deliver(m, ["gemini"])
        listed = sorted(i for i, _ in store.entries("gemini", ["unread"]))
        assert listed == [m.id for m in sorted(ms, key=lambda m: m.date)]

    def test_moves_go_forward_only_and_are_idempotent(self, store: Store) -> None:
        m = message()
        store.deliver(m, ["gemini"])
        assert store.move("gemini", m.id, "read") == "unread"
        assert store.move("gemini", m.id, "read") == "read"  # already there: success
        assert store.move("gemini", m.id, "done") == "read"
        assert store.move("gemini", m.id, "read") == "done"  # never backwards
        assert store.state_of("gemini", m.id) == "done"
        with pytest.raises(NotFound):
            store.move("gemini", message(9).id, "done")

    def test_an_id_already_taken_is_IdTaken_and_writes_nothing(self, store: Store) -> None:
        m = message()
        store.deliver(m, ["gemini"])
        with pytest.raises(IdTaken):
            store.deliver(m.replace(body="other"), ["codex", "gemini"])
        assert store.load("gemini", m.id)[0].body == m.body
        assert store.entries("codex", ["unread"]) == []  # all or nothing
        b = message(5, to=("all",))
        store.publish(b)
        with pytest.raises(IdTaken):
            store.publish(b)

    def test_one_unreadable_message_is_Unreadable_alone(self, backend: Backend, store: Store
                                                        ) -> None:
        good = message(1)
        store.deliver(good, ["gemini"])
        bad = message(2).id
        backend.corrupt("gemini", bad)
        with pytest.raises(Unreadable):
            store.load("gemini", bad)
        assert store.load("gemini", good.id)[0] == good
        assert [(a, i) for a, i, _ in store.unreadable()] == [("gemini", bad)]
        store.quarantine("gemini", bad)
        assert store.unreadable() == [] and store.state_of("gemini", bad) is None


class TestMailReads:
    """What is known of mail without reading it: counts, correspondents, what was sent."""

    role = "MailReads"

    def test_counts_correspondents_and_what_was_sent_need_no_listing(self, store: Store
                                                                     ) -> None:
        sent = [message(n, sender="claude") for n in range(5)]
        for m in sent:
            store.deliver(m, ["gemini"])
        other = message(9, sender="codex")
        store.deliver(other, ["gemini"])
        for m in sent[:3]:
            store.move("gemini", m.id, "done")
        store.move("gemini", sent[0].id, "done")  # again: still three
        assert store.count_done("gemini") == 3 and store.count_done("nobody") == 0
        assert store.correspondents("gemini") == {"claude", "codex"}
        newest = [m.id for m in reversed(sent)]
        assert store.sent_ids("claude", 2) == newest[:2]
        assert store.sent_ids("claude") == newest
        assert store.sent_ids("codex") == [other.id] and store.sent_ids("nobody") == []
        assert store.count_unread("gemini") == (3, [])
        assert store.count_unread("gemini", 2) == (3, [sent[3].id, sent[4].id])
        assert store.count_unread("gemini", 9) == (3, [sent[3].id, sent[4].id, other.id])
        store.move("gemini", sent[3].id, "read")
        assert store.count_unread("gemini", 9) == (2, [sent[4].id, other.id])
        assert store.count_unread("nobody", 5) == (0, [])


class TestBroadcasts:
    """Broadcasts and the seen sets."""

    role = "Broadcasts"

    def test_broadcasts_publish_and_retract(self, store: Store) -> None:
        b = message(1, to=("all",))
        store.publish(b)
        assert store.broadcast_ids() == [b.id] and store.broadcast_ids(live=False) == []
        assert store.load_broadcast(b.id) == (b, True)
        assert store.retract(b.id) is True
        assert store.retract(b.id) is False  # already retracted: idempotent
        assert store.load_broadcast(b.id, header_only=True) == (b.without_body(), False)
        assert store.broadcast_ids() == [] and store.broadcast_ids(live=False) == [b.id]
        with pytest.raises(NotFound):
            store.load_broadcast(message(7).id)


class TestSeenSets:
    """Which broadcasts each agent has been served."""

    role = "SeenSets"

    def test_seen_sets(self, store: Store) -> None:
        b = message(1, to=("all",))
        store.publish(b)
        assert store.seen("gemini") == set()
        store.add_seen("gemini", [b.id])
        store.add_seen("gemini", [b.id])
        assert store.seen("gemini") == {b.id}


class TestLogs:
    """The append-only logs: events and the session log, each in the order written."""

    role = "Logs"

    def test_each_log_keeps_its_order_both_ways_and_only_its_records(self, backend: Backend
                                                                    ) -> None:
        store = backend.store
        for n in range(3):
            store.append_log("events", {"event": "read", "id": f"m{n}", "n": n})
        store.append_log("sessions", {"launcher": "claude", "text": "✓ line\nbreak"},
                         durable=True)
        assert [e["n"] for e in store.read_log("events")] == [0, 1, 2]
        assert [e["n"] for e in store.read_log("events", newest_first=True)] == [2, 1, 0]
        again = open_store(backend.location)
        assert list(again.read_log("sessions")) == [{"launcher": "claude",
                                                     "text": "✓ line\nbreak"}]
        with pytest.raises(StoreError):
            list(store.read_log("elsewhere"))


class TestConfigAndEvents:
    """The events log and the config."""

    role = "ConfigAndEvents"

    def test_events_keep_their_order_both_ways(self, store: Store) -> None:
        for n in range(5):
            store.append_event({"event": "read", "id": f"m{n}"})
        assert [e["id"] for e in store.events()] == [f"m{n}" for n in range(5)]
        newest = [e["id"] for e in store.events(newest_first=True)]
        assert newest == [f"m{n}" for n in reversed(range(5))]

    def test_a_key_is_marked_once_whoever_races(self, store: Store) -> None:
        """The ladder's notice is sent by the one caller that marked its key first."""
        from concurrent.futures import ThreadPoolExecutor

        key = "notify-read-2026-09-21_144808.123456_claude_to_gemini_7f3a9c2e"
        with ThreadPoolExecutor(4) as pool:
            won = list(pool.map(lambda _: store.mark_once(key), range(8)))
        assert won.count(True) == 1
        assert store.mark_once(key) is False and store.mark_once(key + "x") is True
        with pytest.raises(StoreError):
            store.mark_once("../escape")

    def test_config_round_trips_and_updates_under_one_lock(self, store: Store) -> None:
        assert store.load_config() == {}
        put_config(store, {"owner": "sarah", "custom": [1, 2]})

        def add(config: dict[str, object]) -> bool:
            config["agents"] = {"gemini": {}}
            return True

        assert store.update_config(add) is True
        assert store.update_config(lambda config: False) is False
        assert store.load_config() == {"owner": "sarah", "custom": [1, 2], "agents": {"gemini": {}}}


class TestRecords:
    """Keyed records in named namespaces: every backend keeps every namespace alike."""

    role = "Records"

    def test_a_value_is_put_added_once_listed_by_prefix_and_deleted(self, store: Store
                                                                    ) -> None:
        assert store.get("latest", ("gemini", "codex")) is None
        store.put("latest", ("gemini", "codex"), "s-1")
        store.put("latest", ("gemini", "codex"), "s-2")  # replaced whole
        store.put("latest", ("gemini", "grok"), "g-1")
        store.put("latest", ("claude", "codex"), "c-1")
        assert store.get("latest", ("gemini", "codex")) == "s-2"
        assert store.items("latest", ("gemini",)) == {("gemini", "codex"): "s-2",
                                                      ("gemini", "grok"): "g-1"}
        assert store.keys("latest") == [("claude", "codex"), ("gemini", "codex"),
                                        ("gemini", "grok")]  # sorted by key
        assert store.add("fences", ("gemini", "s1"), "s2") is True
        assert store.add("fences", ("gemini", "s1"), "s3") is False  # the first stands
        assert store.get("fences", ("gemini", "s1")) == "s2"
        assert store.delete("latest", ("gemini", "grok")) is True
        assert store.delete("latest", ("gemini", "grok")) is False  # gone already: fine
        assert store.keys("latest", ("gemini",)) == [("gemini", "codex")]

    def test_a_set_grows_by_add_and_a_timed_record_keeps_its_time(self, store: Store
                                                                  ) -> None:
        assert store.get("shown", ("gemini", "s1")) == set()
        before = time.time()
        store.add("shown", ("gemini", "s1"), ["a", "b"])
        store.add("shown", ("gemini", "s1"), ["b", "c"])
        assert store.get("shown", ("gemini", "s1")) == {"a", "b", "c"}
        assert store.items("shown") == {("gemini", "s1"): {"a", "b", "c"}}
        at = store.touched("shown", ("gemini",))[("gemini", "s1")]
        assert before - 5 <= at <= time.time() + 5
        assert store.touch("hook-sessions", ("gemini", "s1")) is False  # none: nothing
        store.put("hook-sessions", ("gemini", "s1"), {"host": "claude"})
        assert store.touch("hook-sessions", ("gemini", "s1")) is True
        assert store.delete("shown", ("gemini", "s1")) and store.items("shown") == {}

    def test_update_changes_records_under_one_lock(self, store: Store) -> None:
        keys = [("sends", "claude"), ("sends", "claude", "gemini")]
        assert store.update("limits", keys, lambda held: held.update(
            {keys[0]: (1.0, 2.0), keys[1]: (3.0, 4.0)}) is None)
        assert store.update("limits", keys, lambda held: bool(held.pop(keys[0])))
        assert store.items("limits", ("sends", "claude")) == {keys[1]: (3.0, 4.0)}
        assert store.update("config", [()], lambda held: held.update({(): {"a": 1}}) is None)
        assert store.get("config", ()) == {"a": 1}
        assert store.update("config", [()], lambda held: False) is False

    def test_take_claims_a_record_once_and_a_lock_keeps_others_out(self, backend: Backend
                                                                   ) -> None:
        store = backend.store
        m = message()
        store.deliver(m, ["gemini"])
        key = ("wake", "gemini", m.id)
        assert store.add("wake", key, WakeEntry(m.id, "gemini", attempt=2))
        taken = store.take("wake", key)
        assert taken is not None and store.take("wake", key) is None
        claimed, entry = taken
        assert claimed[:3] == key and (entry.attempt, entry.claim) == (2, claimed[3])
        assert store.items("wake.claimed", key[:2]) == {claimed: entry}
        assert store.delete("wake.claimed", claimed) and store.keys("wake.claimed") == []
        other = open_store(backend.location)
        with store.lock("wake", ("wake", "gemini")) as held, \
                other.lock("wake", ("wake", "gemini")) as again:
            assert held and not again
        with other.lock("launch", ()) as waited:
            assert waited

    @pytest.mark.parametrize("space", sorted(NAMESPACES))
    def test_a_key_part_that_is_no_safe_name_is_refused_in_every_namespace(
            self, store: Store, space: str) -> None:
        parts = len(NAMESPACES[space].parts)
        for bad in ("../x", "", ".hidden", "a/b"):
            key = tuple([bad] * max(parts, 1))
            with pytest.raises(UnsafePath):
                store.get(space, key)
            with pytest.raises(UnsafePath):
                store.items(space, key[:1])
        with pytest.raises(UnsafePath):
            store.get(space, ("x",) * (parts + 1))  # a key longer than the namespace's
        with pytest.raises(UnsafePath):
            store.get("elsewhere", ())
        with pytest.raises(StoreError):
            store.lock("elsewhere", ())


class TestUpkeep:
    """What doctor looks at."""

    role = "Upkeep"

    def test_a_healthy_store_reports_no_problem(self, store: Store) -> None:
        store.deliver(message(), ["gemini"])
        store.append_event({"event": "delivered", "id": "x"})
        assert store.problems() == [] and store.unreadable() == []
        assert store.fix_permissions() == 0
        leftovers = store.staging()  # a crashed writer's files, if the backend has any
        for item in leftovers:
            store.remove_staging(item)
        assert store.staging() == []


class TestPresence:
    """Presence records of running servers."""

    role = "Presence"

    def test_presence_records(self, store: Store) -> None:
        store.write_presence("gemini", "k1", {"pid": 1})
        store.write_presence("gemini", "k1", {"pid": 2})
        assert store.presence() == [{"pid": 2, "agent": "gemini", "key": "k1"}]
        store.remove_presence("gemini", "k1")
        store.remove_presence("gemini", "k1")
        assert store.presence() == []


class TestSessions:
    """Per-session delivery state: shown ids, hook sessions, instance mail, latest
    sessions, claims and waiters."""

    role = "Sessions"

    def test_session_state_claims_and_waiters(self, store: Store) -> None:
        assert store.shown("gemini", "s1") == set()
        store.add_shown("gemini", "s1", ["a", "b"])
        assert store.shown("gemini", "s1") == {"a", "b"}
        store.prune_sessions("gemini", older_than=3600)
        assert store.shown("gemini", "s1") == {"a", "b"}  # recent: kept
        store.prune_sessions("gemini", older_than=-1)
        assert store.shown("gemini", "s1") == set()
        assert store.claim("gemini", "/a") == "/a"
        assert store.claim("gemini", "/b") == "/a"
        store.replace_claim("gemini", "/b")
        assert store.claim("gemini", "/c") == "/b"
        assert store.waiter("gemini", "s1") is None
        store.set_waiter("gemini", "s1", 41)
        store.set_waiter("gemini", "s1", 42)
        assert store.waiter("gemini", "s1") == 42 and store.waiter_pids("gemini") == [42]

    def test_a_sessions_marks_are_its_own_and_forgotten_with_it(self, store: Store) -> None:
        """What a session's showings await (the ``seen`` rung) is kept apart from what it
        was shown: no listing of shown sessions counts it, and it goes with the session."""
        store.add_shown("gemini", "s1", ["a"])
        store.add("marks", ("gemini", "s1"), ["shown:mslt-0123456789ab:0:start:a"])
        store.add("marks", ("gemini", "s1"), ["seen:mslt-0123456789ab"])
        assert store.shown("gemini", "s1") == {"a"}
        assert store.items("shown") == {("gemini", "s1"): {"a"}}
        assert store.items("marks") == {("gemini", "s1"): {
            "shown:mslt-0123456789ab:0:start:a", "seen:mslt-0123456789ab"}}
        store.prune_sessions("gemini", older_than=3600)
        assert store.keys("marks") == [("gemini", "s1")]  # recent: kept
        store.prune_sessions("gemini", older_than=-1)
        assert store.get("marks", ("gemini", "s1")) == set() and store.items("marks") == {}

    def test_shown_at_says_when_a_session_was_last_shown_anything(self, store: Store) -> None:
        assert store.shown_at("gemini", "s1") is None
        before = time.time()
        store.add_shown("gemini", "s1", ["a"])
        at = store.shown_at("gemini", "s1")
        assert at is not None and before - 5 <= at <= time.time() + 5
        assert store.shown_at("gemini", "s2") is None and store.shown_at("codex", "s1") is None
        store.prune_sessions("gemini", older_than=-1)
        assert store.shown_at("gemini", "s1") is None

    def test_hook_sessions_keep_their_facts_refresh_their_time_and_are_pruned(
            self, store: Store) -> None:
        assert store.hook_sessions() == []
        before = time.time()
        assert store.refresh_hook_session("gemini", "s1") is False  # no record: nothing
        store.record_hook_session("gemini", "s1", {"host": "claude", "pid": 7})
        assert store.refresh_hook_session("gemini", "s1") is True  # the time only
        store.record_hook_session("claude", "s2", {"host": "codex"})
        found = store.hook_sessions()
        assert [(r["agent"], r["session"], r["host"]) for r in found] == [
            ("claude", "s2", "codex"), ("gemini", "s1", "claude")]
        assert found[1]["pid"] == 7 and before - 5 <= found[1]["seen"] <= time.time() + 5
        store.record_hook_session("gemini", "s1", {"host": "claude", "pid": 9})
        assert [r["pid"] for r in store.hook_sessions() if r["agent"] == "gemini"] == [9]
        store.prune_sessions("gemini", older_than=3600)
        assert len(store.hook_sessions()) == 2  # recent: kept
        store.prune_sessions("gemini", older_than=-1)
        assert [r["agent"] for r in store.hook_sessions()] == ["claude"]
        with pytest.raises(UnsafePath):
            store.record_hook_session("gemini", "../x", {})

    def test_instance_mail_is_indexed_until_pruned(self, store: Store) -> None:
        one, two = make_message(n=1).id, make_message(n=2).id
        assert store.instance_mail("gemini") == {}
        store.add_instance_mail("gemini", one, "s1")
        store.add_instance_mail("gemini", one, "s1")  # again: fine
        store.add_instance_mail("gemini", two, "s2")
        assert store.instance_mail("gemini") == {one: "s1", two: "s2"}
        assert store.instance_mail("claude") == {}
        store.prune_sessions("gemini", older_than=3600)
        assert len(store.instance_mail("gemini")) == 2
        store.prune_sessions("gemini", older_than=-1)
        assert store.instance_mail("gemini") == {}

    def test_latest_session_per_agent_and_host(self, store: Store) -> None:
        assert store.latest_session("gemini", "codex") is None
        store.set_latest_session("gemini", "codex", "019a-first")
        store.set_latest_session("gemini", "codex", "019a-second")  # the newest replaces it
        store.set_latest_session("gemini", "grok", "g-1")
        store.set_latest_session("claude", "codex", "c-1")
        assert store.latest_session("gemini", "codex") == "019a-second"
        assert store.latest_session("gemini", "grok") == "g-1"
        assert store.latest_session("claude", "codex") == "c-1"
        assert store.latest_session("claude", "grok") is None
        for unsafe in ("--yolo", "a b", "../x", ""):  # it becomes an argument of a wake
            with pytest.raises(UnsafePath):
                store.set_latest_session("gemini", "codex", unsafe)
        assert store.latest_session("gemini", "codex") == "019a-second"


class TestQueues:
    """The wake queue and the notifier queues (their rules: mailslot.wake.claims)."""

    role = "Queues"

    def test_wake_queue_enqueue_claim_release_and_orphans(self, store: Store) -> None:
        m = message()
        store.deliver(m, ["gemini"])
        entry = WakeEntry(m.id, "gemini", not_before=time.time())
        assert Queue(store).enqueue(entry) is True
        assert Queue(store).enqueue(entry) is False  # one wake per message
        assert Queue(store).agents() == ["gemini"]
        assert [e.message_id for e in Queue(store).pending("gemini")] == [m.id]
        with Queue(store).lock("gemini") as held:
            assert held
            claimed = Queue(store).claim(entry)
            assert claimed is not None and claimed.claim is not None
            assert Queue(store).claim(entry) is None  # taken
            assert [o.message_id for o in Queue(store).orphans("gemini")] == [m.id]
            Queue(store).release(claimed, WakeEntry(m.id, "gemini", attempt=2))
        assert [e.attempt for e in Queue(store).pending("gemini")] == [2]
        assert Queue(store).orphans("gemini") == []

    def test_concurrent_processes_claim_once_and_finish_idempotently(
            self, backend: Backend, store: Store, tmp_path: Path) -> None:
        if not backend.processes:
            pytest.skip("a memory store is one process's: no other process can race it")
        m = message()
        store.deliver(m, ["gemini"])
        Queue(store).enqueue(WakeEntry(m.id, "gemini"))
        go = tmp_path / "go"
        outs = [tmp_path / f"out{n}" for n in range(6)]
        racers = [worker("race", backend.location, "gemini", m.id, go, out) for out in outs]
        go.touch()
        for racer in racers:
            finish(racer)
        assert sorted(out.read_text() for out in outs) == ["lost"] * 5 + ["won"]
        assert store.entries("gemini", ["unread", "read", "done"]) == [(m.id, "done")]

    def test_notifier_queues_are_apart_from_the_wake_queue_and_from_each_other(
            self, store: Store) -> None:
        m = message()
        store.deliver(m, ["gemini"])
        lane0, lane1 = notifier_queue(store, 0), notifier_queue(store, 1)
        assert lane0.enqueue(WakeEntry(m.id, "gemini")) is True
        assert lane0.enqueue(WakeEntry(m.id, "gemini")) is False  # one per message
        assert lane1.enqueue(WakeEntry(m.id, "gemini")) is True
        assert Queue(store).agents() == [] and Queue(store).enqueue(WakeEntry(m.id, "gemini"))
        with lane0.lock("gemini") as held0, Queue(store).lock("gemini") as held:
            assert held0 and held  # a running wake never holds up a notifier
            claimed = lane0.claim(WakeEntry(m.id, "gemini"))
            assert claimed is not None
            lane0.release(claimed)
        assert lane0.agents() == [] and lane1.agents() == ["gemini"]
        assert store.queued_agents() == {"wake": ["gemini"], "notify-1": ["gemini"]}
        lane1.enqueue(WakeEntry(m.id, "codex"))
        assert store.queued_agents()["notify-1"] == ["codex", "gemini"]
        assert [e.message_id for e in Queue(store).pending("gemini")] == [m.id]
        for lane in (-1, NOTIFY_QUEUES, True, "0"):
            with pytest.raises(UnsafePath):
                notifier_queue(store, lane)  # type: ignore[arg-type]

    def test_each_queue_has_its_own_lock_between_processes(self, backend: Backend) -> None:
        """Another process (here: another store object, its own descriptor or connection)
        is kept out of the same queue's lock only."""
        other = open_store(backend.location)
        try:
            with notifier_queue(backend.store, 0).lock("gemini") as held:
                assert held
                with notifier_queue(other, 0).lock("gemini") as again:
                    assert not again
                for elsewhere in (Queue(other), notifier_queue(other, 1)):
                    with elsewhere.lock("gemini") as free:
                        assert free
            with notifier_queue(other, 0).lock("gemini") as after:
                assert after  # released on leaving
        finally:
            getattr(other, "close", lambda: None)()


def _record(name: str = "claude", **fields: object) -> AgentRecord:
    return AgentRecord(**{"name": name, "secret_hash": "sha256:" + "0" * 64,
                          "created": "2026-12-01T07:00:00+00:00", **fields})  # type: ignore[arg-type]


class TestRegistry:
    """Registered agents."""

    role = "Registry"

    def test_registered_agents_round_trip(self, store: Store) -> None:
        assert store.registered("claude") is None and store.registered_agents() == []
        parent = _record(runtime="claude-code")
        child = _record("reviewer", parent="claude", parent_generation=1)
        assert store.register_agent(parent) and store.register_agent(child)
        assert store.registered("claude") == parent
        assert store.registered_agents() == [parent, child]

    def test_an_expiry_round_trips(self, store: Store) -> None:
        child = _record("reviewer", parent="claude", parent_generation=1,
                        expires="2026-12-02T07:00:00+00:00")
        assert store.register_agent(_record()) and store.register_agent(child)
        assert store.registered("reviewer") == child
        assert store.registered("claude") == _record()  # no expiry: never
        assert store.registered_agents() == [_record(), child]

    def test_register_never_replaces(self, store: Store) -> None:
        assert store.register_agent(_record())
        assert not store.register_agent(_record(generation=7))
        assert store.registered("claude") == _record()

    def test_replace_registered(self, store: Store) -> None:
        with pytest.raises(NotFound):
            store.replace_registered(_record())
        store.register_agent(_record())
        rotated = _record(generation=2, secret_hash="sha256:" + "1" * 64, revoked=True)
        store.replace_registered(rotated)
        assert store.registered("claude") == rotated

    def test_concurrent_registrations_one_wins(self, store: Store) -> None:
        results: list[bool] = []
        threads = [threading.Thread(target=lambda n=n: results.append(
            store.register_agent(_record(generation=n + 1)))) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(results) == [False] * 7 + [True]


class TestGates:
    """Gates: accept settings, members, requests, passed ids."""

    role = "Gates"

    def test_gates_members_and_requests(self, store: Store) -> None:
        assert store.accept_of("claude") == "open"
        store.set_accept("claude", "members")
        assert store.accept_of("claude") == "members"
        assert store.set_member("claude", "gemini", True)
        assert not store.set_member("claude", "gemini", True)
        assert store.members("claude") == ["gemini"]
        assert store.set_member("claude", "gemini", False)
        assert not store.set_member("claude", "gemini", False) and store.members("claude") == []
        m = message()
        store.set_request("claude", "codex", m.id)
        assert store.requests("claude") == {"codex": m.id}
        store.set_request("claude", "codex", None)
        store.set_request("claude", "codex", None)  # gone already is fine
        assert store.requests("claude") == {}
        store.set_accept("claude", "open")
        assert store.accept_of("claude") == "open"

    def test_every_gated_inbox_is_listed(self, store: Store) -> None:
        assert store.gated() == {}
        store.set_accept("claude", "members")
        store.set_accept("alice", "group:team")  # no mailbox, never a message: listed
        store.set_accept("codex", "group:team")
        store.set_member("gemini", "codex", True)  # members alone: an open inbox
        assert store.gated() == {"alice": "group:team", "claude": "members",
                                 "codex": "group:team"}
        store.set_accept("codex", "open")
        assert store.gated() == {"alice": "group:team", "claude": "members"}

    def test_passed_ids(self, store: Store) -> None:
        assert store.passed("claude") == set()
        ids = [message(1).id, message(2).id]
        store.add_passed("claude", ids)
        store.add_passed("claude", [])
        assert store.passed("claude") == set(ids)


class TestFences:
    """Replaced sessions."""

    role = "Fences"

    def test_fences(self, store: Store) -> None:
        assert store.fenced_by("claude", "aaaa1111") is None
        store.fence("claude", "aaaa1111", "bbbb2222")
        store.fence("claude", "aaaa1111", "cccc3333")  # the first replacement stands
        assert store.fenced_by("claude", "aaaa1111") == "bbbb2222"
        assert store.fenced_by("gemini", "aaaa1111") is None


class TestLimits:
    """The loop governor's token buckets: read, changed and saved under one lock."""

    role = "Limits"

    def test_buckets_are_kept_changed_and_removed(self, backend: Backend) -> None:
        store = backend.store
        keys = ["sends.claude.gemini", "sends.claude"]

        def fill(held: dict[str, tuple[float, float]]) -> bool:
            assert held == {}  # a bucket never stored is not there (the rule: full)
            held.update({keys[0]: (2.5, 100.0), keys[1]: (7.0, 100.5)})
            return True

        assert store.update_buckets(keys, fill)
        seen: list[dict[str, tuple[float, float]]] = []
        assert not open_store(backend.location).update_buckets(
            keys, lambda held: seen.append(dict(held)) or False)
        assert seen == [{keys[0]: (2.5, 100.0), keys[1]: (7.0, 100.5)}]

        def drop(held: dict[str, tuple[float, float]]) -> bool:
            del held[keys[0]]
            return True

        store.update_buckets(keys, drop)
        store.update_buckets([*keys, "wakes.gemini"],
                             lambda held: seen.append(dict(held)) or False)
        assert seen[-1] == {keys[1]: (7.0, 100.5)}

    def test_two_stores_at_once_never_lose_a_change(self, backend: Backend) -> None:
        """Each of two stores (two connections, two lock holders) adds 1 to a bucket
        many times at once: every addition lands."""
        key, times = "sends.claude", 40

        def add(held: dict[str, tuple[float, float]]) -> bool:
            tokens, _ = held.get(key, (0.0, 0.0))
            held[key] = (tokens + 1, 0.0)
            return True

        def work() -> None:
            other = open_store(backend.location)
            for _ in range(times):
                other.update_buckets([key, "sends.claude.gemini"], add)

        threads = [threading.Thread(target=work) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        got: list[float] = []
        backend.store.update_buckets([key], lambda held: got.append(held[key][0]) or False)
        assert got == [2 * times]

    def test_a_key_that_is_no_safe_name_is_refused(self, store: Store) -> None:
        with pytest.raises(UnsafePath):
            store.update_buckets(["../config.json"], lambda held: True)
        for group in ("../config", "wakes", "wakes.bob.carol", "wakes."):
            with pytest.raises(UnsafePath):
                store.bucket_group(group)

    def test_a_group_holds_the_buckets_below_it_only(self, backend: Backend) -> None:
        store = backend.store
        assert store.bucket_group("wakes.bob") == {}  # nothing stored yet
        stored = {"wakes.bob.carol": (3.0, 10.0), "wakes.bob.alice": (0.5, 11.0),
                  "wakes.bob": (1.0, 12.0), "wakes.bobby.carol": (2.0, 13.0)}
        store.update_buckets(list(stored), lambda held: held.update(stored) is None)
        again = open_store(backend.location)
        assert again.bucket_group("wakes.bob") == {
            "wakes.bob.carol": (3.0, 10.0), "wakes.bob.alice": (0.5, 11.0)}
        assert again.bucket_group("wakes.bobby") == {"wakes.bobby.carol": (2.0, 13.0)}


class TestSessionLog:
    """The session log and the launch lock."""

    role = "SessionLog"

    def test_the_session_log_keeps_records_in_order_and_reopens(self, backend: Backend) -> None:
        store = backend.store
        assert store.started_sessions() == []
        first = {"ts": "2026-12-01T07:00:00+00:00", "launcher": "claude", "outcome": "background",
                 "prompt": "line one\nline two ✓", "pid": 12, "register_as": None}
        second = {**first, "launcher": "codex", "outcome": "failed"}
        store.log_session(first)
        store.log_session(second)
        assert store.started_sessions() == [first, second]
        assert open_store(backend.location).started_sessions() == [first, second]

    @pytest.mark.parametrize("shared", [False, True])
    def test_the_launch_lock_keeps_a_second_holder_waiting_until_the_first_is_done(
            self, backend: Backend, shared: bool) -> None:
        """Another process (another store) or another thread of this one (the same store)."""
        other = backend.store if shared else open_store(backend.location)
        order: list[str] = []
        entered = threading.Event()

        def second() -> None:
            with other.launch_lock():
                order.append("second")
                entered.set()

        waiter = threading.Thread(target=second)
        with backend.store.launch_lock():
            waiter.start()
            time.sleep(0.5)  # room for a lock that does not hold (not an assertion)
            order.append("first")
        assert entered.wait(60)
        waiter.join(60)
        assert order == ["first", "second"]

    def test_the_session_log_is_private(self, root: Path) -> None:
        FileStore(root).log_session({"launcher": "claude"})
        path = root / "log" / "sessions.jsonl"
        assert path.stat().st_mode & 0o777 == 0o600
        assert path.parent.stat().st_mode & 0o777 == 0o700


class TestSearching:
    """Search."""

    role = "Searching"

    def test_search_finds_words_phrases_prefixes_with_filters(self, store: Store) -> None:
        from mailslot.core.query import Search, parse

        plan = make_message(to=("gemini",), subject="Database migration plan",
                            body="We migrate on Friday.", n=1)
        other = make_message(sender="codex", to=("gemini", "sarah"), subject="Lunch",
                             body="the migration of pizza", n=2)
        mine = make_message(sender="gemini", to=("claude",), subject="Re: plan",
                            body="Friday is fine", n=3).replace(thread=plan.id,
                                                                 in_reply_to=plan.id)
        news = make_message(sender="sarah", to=("all",), subject="Freeze", body="no deploys", n=4)
        store.deliver(plan, ["gemini"])
        store.deliver(other, ["gemini", "sarah"])
        store.deliver(mine, ["claude"])
        store.publish(news)

        def ids(query: str | None = None, **filters: object) -> list[str]:
            return store.search(Search(match=None if query is None else parse(query),
                                       **filters))  # type: ignore[arg-type]

        assert ids("migration")[0] == plan.id  # subject words rank first
        assert set(ids("migrat*")) == {plan.id, other.id}
        assert ids('"migration plan"') == [plan.id]
        assert ids("friday NOT pizza", reader="gemini") == [plan.id]
        assert set(ids("friday", reader="gemini", sent=True)) == {plan.id, mine.id}
        assert ids("deploys", reader="gemini") == [news.id]  # broadcasts reach every reader
        assert ids("migration", sender="codex") == [other.id]
        assert ids("migration", recipient="sarah") == [other.id]
        assert ids(thread=plan.id) == [plan.id, mine.id]  # no words: oldest first
        assert ids("friday", since=mine.date) == [mine.id]
        assert ids("friday", until=mine.date) == [plan.id]
        assert ids("migration", limit=1, offset=1) == ids("migration")[1:2]
        assert ids("nothing") == []
        assert store.reindex() == 4
        assert set(ids("migrat*")) == {plan.id, other.id}

    def test_search_of_an_empty_store_finds_nothing(self, store: Store) -> None:
        from mailslot.core.query import Search, parse

        assert store.search(Search(match=parse("anything"))) == []


    def test_a_search_covers_what_was_caught_up(self, store: Store) -> None:
        from mailslot.core.query import Search, parse

        store.deliver(message(1), ["gemini"])
        assert store.catch_up_index(None) == 0
        assert store.unsearched() == 0
        assert len(store.search(Search(match=parse("body")))) == 1


class TestArchives:
    """Retention: done mail moved into month archives and back (the file store), or
    one clear line where a backend keeps no archive (PostgreSQL, memory)."""

    role = "Archives"

    def test_done_mail_goes_to_its_month_and_back(self, store: Store) -> None:
        old, unread = message(1), message(2)
        store.deliver(old, ["gemini"])
        store.deliver(unread, ["gemini"])
        store.move("gemini", old.id, "done")
        if store.kind != "files":  # a database, memory: done mail stays where it is
            with pytest.raises(StoreError, match="archive is for the file store"):
                store.archive_done("9999-01-01_000000")
            assert store.archive_months() == {} and store.archived(old.id) == []
            return
        month = old.id[:7]
        assert store.archive_done("9999-01-01_000000", dry_run=True) == {month: 1}
        assert store.state_of("gemini", old.id) == "done"
        assert store.archive_done("9999-01-01_000000") == {month: 1}
        assert store.state_of("gemini", old.id) is None
        assert store.state_of("gemini", unread.id) == "unread"  # never touched
        assert [(a, m.id) for a, m in store.archived(old.id)] == [("gemini", old.id)]
        assert store.archive_months() == {month: 1}
        assert store.archive_done("9999-01-01_000000") == {}  # nothing more to do
        assert store.restore_archived([month]) == {month: 1}
        assert store.state_of("gemini", old.id) == "done"
        assert store.archive_months() == {} and store.archived(old.id) == []


class TestWatches:
    """Watching: a kick when something may have changed, or ``None`` (poll)."""

    role = "Watches"

    def test_watch_kicks_on_new_mail_or_says_poll(self, backend: Backend) -> None:
        store = backend.store
        kicked = threading.Event()
        store.deliver(message(0), ["gemini"])
        watching = store.watch(kicked.set, mail_for="gemini")
        if watching is None:
            assert not backend.watches  # polling only where the backend cannot tell
            return
        try:
            assert watching.how
            kicked.clear()
            store.deliver(message(1), ["gemini"])
            assert kicked.wait(30)
        finally:
            watching.close()

    def test_watching_the_wake_queue_kicks_for_notifier_queues_too(self, backend: Backend
                                                                    ) -> None:
        store = backend.store
        kicked = threading.Event()
        watching = store.watch(kicked.set, wakes=True)
        if watching is None:
            assert not backend.watches  # polling only where the backend cannot tell
            return
        try:
            kicked.clear()
            m = message()
            store.deliver(m, ["gemini"])
            kicked.clear()
            notifier_queue(store, 3).enqueue(WakeEntry(m.id, "gemini"))
            assert kicked.wait(30)
        finally:
            watching.close()

    def test_watch_mail_kicks_on_any_mailbox_state_change_and_broadcast(
            self, backend: Backend) -> None:
        store = backend.store
        earlier = message(3, to=("gemini",))
        store.deliver(earlier, ["gemini"])
        kicked = threading.Event()
        watching = store.watch_mail(kicked.set)
        if watching is None:
            assert not backend.watches  # polling only where the backend cannot tell
            return
        try:
            assert watching.how
            directed, broadcast = message(1, to=("newcomer",)), message(2, to=("all",))
            # A state change in a mailbox that was there when the watch began: one made a
            # moment before may be missed (the contract says so; callers look again anyway).
            changes = [
                lambda: store.deliver(directed, ["newcomer"]),  # a mailbox new since the start
                lambda: store.move("gemini", earlier.id, "done"),
                lambda: store.publish(broadcast),
                lambda: store.retract(broadcast.id),
                lambda: store.quarantine("gemini", earlier.id),
                lambda: store.archive_mailbox("newcomer", "20261201T080000"),
            ]
            for change in changes:
                kicked.clear()
                change()
                assert kicked.wait(30)
        finally:
            watching.close()


class TestErrors:
    """Every role's errors: always a MailslotError, one line, nothing half-done."""

    def test_a_planted_link_is_UnsafePath_and_nothing_is_written(self, backend: Backend) -> None:
        first = message(0)
        backend.store.deliver(first, ["codex"])
        backend.plant_link("gemini")
        with pytest.raises(UnsafePath):
            backend.store.deliver(message(1), ["codex", "gemini"])
        assert [i for i, _ in backend.store.entries("codex", ["unread"])] == [first.id]

    def test_permission_denied_is_one_StoreError_line_and_rolls_back(
            self, backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
        backend.store.deliver(message(0), ["codex", "gemini"])
        backend.deny(monkeypatch, "gemini")
        with pytest.raises(StoreError) as caught:
            backend.store.deliver(message(1), ["codex", "gemini"])
        assert "permission denied" in str(caught.value) and "\n" not in str(caught.value)
        assert "gemini" in str(caught.value)
        assert len(backend.store.entries("codex", ["unread"])) == 1  # codex's copy went again

    def test_a_full_disk_is_one_StoreError_line_and_writes_nothing(
            self, backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
        backend.store.deliver(message(0), ["gemini"])
        with monkeypatch.context() as m:
            backend.fill(m)
            for attempt in (lambda: backend.store.deliver(message(1), ["gemini"]),
                            lambda: put_config(backend.store, {"owner": "sarah"}),
                            lambda: backend.store.add_seen("gemini", ["x"])):
                with pytest.raises(StoreError, match="the disk is full") as caught:
                    attempt()
                assert "\n" not in str(caught.value)
        assert len(backend.store.entries("gemini", ["unread"])) == 1
        assert backend.store.load_config() == {}


# The shape itself -----------------------------------------------------------------
ROLE_CLASSES = [c for c in list(globals().values())
                if isinstance(c, type) and c.__name__.startswith("Test") and hasattr(c, "role")]


def names(cls: type) -> set[str]:
    """The methods and attributes ``cls`` declares (its own, not inherited)."""
    return ({n for n, v in vars(cls).items() if not n.startswith("_") and callable(v)}
            | {n for n in vars(cls).get("__annotations__", {}) if not n.startswith("_")})


PRIMITIVES = {n for group in primitives.GROUPS for n in names(group)}
"""What a backend writes: 29 methods and 4 attributes."""
METHODS = {n for n in PRIMITIVES if callable(getattr(primitives.Primitives, n, None))}
BACKEND_CLASSES = {"files": "mailslot.backends.files.file_store:FileStore",
                   "postgres": "mailslot.backends.postgres.pg_store:PostgresStore",
                   "memory": "mailslot.backends.memory.memory_store:MemoryStore"}


def test_every_method_of_store_is_a_primitive_or_in_exactly_one_role() -> None:
    """The primitives' groups share no name; ``Store`` writes no primitive and every
    method it builds on them is in exactly one role; and a backend writes at most 30
    methods."""
    grouped = [n for group in primitives.GROUPS for n in names(group)]
    assert len(grouped) == len(set(grouped)) == 33
    built = {n for c in Store.__mro__ if c.__module__ == Store.__module__ for n in names(c)}
    in_roles = [n for _, methods in roles.ROLES.values() for n in methods]
    assert sorted(in_roles) == sorted(built) and not built & PRIMITIVES
    assert len(METHODS) == 29 <= 30 and len(PRIMITIVES - METHODS) == 4


def _backend_class(kind: str) -> type:
    from importlib import import_module

    if kind == "postgres":
        pytest.importorskip("psycopg")
    module, name = BACKEND_CLASSES[kind].split(":")
    found: type = getattr(import_module(module), name)
    return found


@pytest.mark.parametrize("kind", BACKENDS)
def test_each_backend_writes_every_primitive(kind: str) -> None:
    """By name: every primitive is the backend's own (``Store`` has none to inherit),
    and every role's method is there (inherited, or overridden for speed)."""
    cls = _backend_class(kind)
    mine = {n for c in cls.__mro__ if c.__module__.startswith("mailslot.backends.")
            for n in vars(c)}
    assert sorted(METHODS - mine) == []
    assert all(hasattr(cls, n) for _, methods in roles.ROLES.values() for n in methods)


def test_the_memory_store_is_its_primitives_alone_and_small() -> None:
    """The proof that a backend is cheap: the memory store writes the primitives and no
    other public method, in at most 300 lines, and passes every test above."""
    from mailslot.backends.memory import memory_store

    written = {n for n in names(memory_store.MemoryStore) if n not in ("kind", "folder")}
    assert written == METHODS
    assert Path(memory_store.__file__).read_text(encoding="utf-8").count("\n") <= 300


def test_every_group_and_role_has_its_contract_tests() -> None:
    assert sorted(c.role for c in ROLE_CLASSES) == sorted(
        [g.__name__ for g in primitives.GROUPS] + list(roles.ROLES))
