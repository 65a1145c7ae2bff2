"""Row-level security on every table with per-agent data: an agent role made
by ``mailslot pg grant`` cannot read another agent's rows nor forge them, by direct SQL;
and mailslot itself, run as that role, still does everything an agent does."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import psycopg
import pytest

from hookkit import fixture
from mailslot import Mailbox
from mailslot.access.identity import Identity
from mailslot.backends import open_store
from mailslot.core.errors import MailslotError, StoreError
from mailslot.core.message import Message, to_bytes
from mailslot.mail.presence import Beacon
from mailslot.store import Store, WakeEntry
from mailslot.wake.claims import Queue, notifier_queue
from pgcluster import Cluster
from support import make_message, put_config, run_cli

PRIVATE = ("mail", "seen", "shown", "marks", "waiters", "claims", "latest_sessions",
           "fences", "wakes", "passed", "session_log")
"""Tables whose rows of another agent an agent role never sees."""


@pytest.fixture
def url(pg_cluster: Cluster) -> str:
    return pg_cluster.new_database()


def as_role(url: str, agent: str) -> str:
    return url.replace("postgres@", f"mailslot_{agent}@")


@pytest.fixture
def codex_mail(url: str) -> Message:
    """Codex has a row in every table: mail from claude, and everything its own
    processes keep (written as codex's role where the role is what stamps the row)."""
    admin = open_store(url)
    put_config(admin, {"owner": "sarah", "agents": {"codex": {
        "wake_on_mail": True, "wake_method": "command", "command": ["true"]}}})
    admin.grant("gemini")
    admin.grant("codex")
    claude = Mailbox(admin, Identity("claude", "--agent"))
    news = claude.broadcast("news", "for all")
    admin.set_accept("codex", "members")
    admin.set_member("codex", "claude", True)
    sent = claude.send("codex", "for codex only", "secret", wake=True)
    admin.add_passed("codex", [sent.id])
    admin.set_request("codex", "claude", sent.id)
    admin.add_seen("codex", [news.id])
    admin.add_shown("codex", "s1", [sent.id])
    admin.add("marks", ("codex", "s1"), [f"shown:mslt-0123456789ab:0:start:{sent.id}"])
    admin.set_waiter("codex", "s1", 4242)
    admin.claim("codex", "/home/codex")
    admin.set_latest_session("codex", "claude", "s1")
    admin.fence("codex", "s0", "s1")
    admin.write_presence("codex", "1", {"pid": 1, "hostname": "h", "started": "x",
                                        "heartbeat": "x"})
    open_store(as_role(url, "codex")).log_session({"launcher": "codex", "prompt": "secret"})
    return sent


@pytest.fixture
def gemini_sql(url: str, codex_mail: Message) -> Iterator[psycopg.Connection[object]]:
    with psycopg.connect(as_role(url, "gemini"), autocommit=True) as conn:
        yield conn  # type: ignore[misc]


@pytest.mark.parametrize("table", PRIVATE)
def test_a_role_cannot_read_or_change_another_agents_rows(
        gemini_sql: psycopg.Connection[object], table: str) -> None:
    assert gemini_sql.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,)
    column = "state" if table == "mail" else "agent"  # a role changes only mail's state
    assert gemini_sql.execute(f"UPDATE {table} SET {column} = {column}").rowcount == 0
    assert gemini_sql.execute(f"DELETE FROM {table}").rowcount == 0


def test_the_rows_were_there_for_their_owner(url: str, codex_mail: Message) -> None:
    with psycopg.connect(as_role(url, "codex"), autocommit=True) as conn:
        for table in PRIVATE:
            assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() != (0,), table


FORGERIES = {
    "mail from codex": "INSERT INTO mail (agent, id, state, data, sender) VALUES "
                       "('claude', 'f1', 'unread', '', 'codex')",
    "mailslot's notice in codex's hand": "INSERT INTO mail (agent, id, state, data, "
                                         "sender, written_by) VALUES ('claude', 'f5', "
                                         "'unread', '', 'mailslot', 'codex')",
    "a broadcast from codex": "INSERT INTO broadcasts (id, live, data, sender) VALUES "
                              "('f2', true, '', 'codex')",
    "codex's seen set": "INSERT INTO seen VALUES ('codex', 'f3')",
    "codex's presence": "INSERT INTO presence VALUES ('codex', '9', '{}')",
    "codex's gate": "INSERT INTO gates VALUES ('codex', 'open') ON CONFLICT (agent) DO "
                    "UPDATE SET accept = 'open'",
    "codex's members": "INSERT INTO members VALUES ('codex', 'gemini')",
    "codex's fence": "INSERT INTO fences VALUES ('codex', 's1', 'forged')",
    "codex's session marks": "INSERT INTO marks (agent, session, word) VALUES "
                             "('codex', 's1', 'missed:mslt-0123456789ab')",
    "codex's latest session": "INSERT INTO latest_sessions VALUES ('codex', 'x', 'y')",
    "a wake for mail gemini did not send": "INSERT INTO wakes (agent, id, attempt, "
                                           "not_before) SELECT 'codex', %s, 1, 0",
    "a pass through codex's gate for claude's mail": "INSERT INTO passed SELECT 'codex', %s",
    "a request in claude's name": "INSERT INTO requests VALUES ('codex', 'claude', 'f4')",
    "a session log row of codex": "INSERT INTO session_log (record, agent) VALUES "
                                  "('{}', 'codex')",
}


@pytest.mark.parametrize("what", FORGERIES)
def test_a_role_cannot_forge_another_agents_rows(
        gemini_sql: psycopg.Connection[object], codex_mail: Message, what: str) -> None:
    sql = FORGERIES[what]
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        gemini_sql.execute(sql, (codex_mail.id,) if "%s" in sql else ())  # type: ignore[arg-type]


def test_shared_directory_tables_are_readable_but_not_writable(
        gemini_sql: psycopg.Connection[object]) -> None:
    """Who is online, whose inbox is gated and the broadcasts are for everyone to
    read; only their owner changes them (a broadcast: only its sender retracts it)."""
    for table in ("presence", "gates", "members", "broadcasts"):
        assert gemini_sql.execute(f"SELECT count(*) FROM {table}").fetchone() != (0,)
    assert gemini_sql.execute("UPDATE broadcasts SET live = false").rowcount == 0
    assert gemini_sql.execute("UPDATE gates SET accept = 'open'").rowcount == 0
    assert gemini_sql.execute("DELETE FROM presence").rowcount == 0
    assert gemini_sql.execute("SELECT count(*) FROM quarantine").fetchone() == (0,)
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        gemini_sql.execute("INSERT INTO quarantine VALUES ('codex', 'x', '')")
    for table in ("archived_mail", "agent_roles"):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            gemini_sql.execute(f"SELECT * FROM {table}")


def test_an_agent_role_still_does_everything_an_agent_does(
        url: str, codex_mail: Message) -> None:
    """Through mailslot as gemini's role: send to a gated, opted-in inbox (the wake,
    the request and the pass are written for codex), broadcast and retract, presence,
    reading and marking its own mail; and codex's role answering the request (a notice
    from mailslot, written by codex's role)."""
    store: Store = open_store(as_role(url, "gemini"))
    gemini = Mailbox(store, Identity("gemini", "--agent"))
    asked = gemini.gate.join("codex", "please")
    own = gemini.broadcast("mine", "x")
    gemini.retract(own.id)
    Beacon(store, "gemini").announce()
    reply = Mailbox(open_store(url), Identity("claude", "--agent")).send("gemini", "hi", "y")
    assert reply.id in [i.message.id for i in gemini.inbox()]  # and the broadcast
    gemini.done([reply.id])
    assert open_store(url).requests("codex").get("gemini") == asked.id
    codex = Mailbox(open_store(as_role(url, "codex")), Identity("codex", "--agent"))
    assert codex.gate.admit("gemini")  # mailslot tells gemini, in codex's hand
    admin = open_store(url)
    told = [admin.load("gemini", i)[0] for i, _ in admin.entries("gemini", ["unread"])]
    assert [m.sender for m in told if m.subject == "codex admitted you"] == ["mailslot"]
    assert admin.state_of("codex", asked.id) == "unread"
    assert [e.message_id for e in Queue(admin).pending("codex")] == sorted(
        [codex_mail.id, asked.id])
    assert "gemini" not in admin.requests("codex")  # answered
    logged = [(e["event"], e.get("agent")) for e in admin.events() if e.get("id") == asked.id]
    assert logged == [("delivered", "gemini"), ("wake_queued", "codex")]  # in gemini's hand
    assert admin.state_of("gemini", reply.id) == "done"
    with pytest.raises(StoreError, match="permission denied"):
        notifier_queue(store, 0).enqueue(WakeEntry(codex_mail.id, "codex"))


def test_a_role_cannot_slip_mail_past_a_gate_by_sql(url: str, codex_mail: Message) -> None:
    """Gemini's role, not admitted to codex's gated inbox, records a pass through the
    gate for its own message (a role may) and then writes the message there: the
    database refuses the row, and codex never sees it. A reply to mail codex did not
    send gemini is refused the same way."""
    stray = make_message(sender="gemini", to=("codex",))
    with psycopg.connect(as_role(url, "gemini"), autocommit=True) as conn:
        conn.execute("INSERT INTO passed VALUES ('codex', %s)", (stray.id,))
        for reply_to in (None, codex_mail.id):
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="admitted"):
                conn.execute("INSERT INTO mail (agent, id, state, data, sender, reply_to) "
                             "VALUES ('codex', %s, 'unread', %s, 'gemini', %s)",
                             (stray.id, to_bytes(stray), reply_to))
    codex = Mailbox(open_store(as_role(url, "codex")), Identity("codex", "--agent"))
    assert stray.id not in [i.message.id for i in codex.inbox()]
    assert open_store(url).state_of("codex", stray.id) is None
    with pytest.raises(StoreError, match="codex accepts mail only from admitted members"):
        Mailbox(open_store(as_role(url, "gemini")), Identity("gemini", "--agent")
                )._deliver(["codex"], "past the service's own check", "x")


def test_a_gate_in_the_database_lets_in_what_mailslot_lets_in(
        url: str, codex_mail: Message) -> None:
    """As their own roles: an admitted member, the owner, a reply to codex's own mail,
    and an access request reach codex's gated inbox."""
    admin = open_store(url)
    for name in ("claude", "sarah"):
        admin.grant(name)
    codex = Mailbox(open_store(as_role(url, "codex")), Identity("codex", "--agent"))
    question = codex.send("gemini", "a question", "?")
    gemini = Mailbox(open_store(as_role(url, "gemini")), Identity("gemini", "--agent"))
    answer = gemini.reply(question.id, "an answer")
    asked = gemini.gate.join("codex", "let me in")
    member = Mailbox(open_store(as_role(url, "claude")), Identity("claude", "--agent")
                     ).send("codex", "from a member", "x")
    owner = Mailbox(open_store(as_role(url, "sarah")), Identity("sarah", "--agent")
                    ).send("codex", "from the owner", "x")
    shown = {i.message.id for i in codex.inbox()}
    assert {answer.id, asked.id, member.id, owner.id} <= shown
    assert codex.gate.pending()["gemini"] == asked.id


def test_mail_slipped_into_a_gated_inbox_by_the_admin_role_is_set_aside(
        url: str, codex_mail: Message) -> None:
    """A row the gate in the database does not see (written by the admin role, which
    no policy binds, or before the gate existed) still meets the door: codex, reading
    as its own role, never sees it; it is set aside and gemini is told."""
    stray = make_message(sender="gemini", to=("codex",))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("INSERT INTO mail (agent, id, state, data, sender) VALUES "
                     "('codex', %s, 'unread', %s, 'gemini')", (stray.id, to_bytes(stray)))
    codex = Mailbox(open_store(as_role(url, "codex")), Identity("codex", "--agent"))
    assert stray.id not in [i.message.id for i in codex.inbox()]
    admin = open_store(url)
    assert admin.state_of("codex", stray.id) is None
    told = [admin.load("gemini", i)[0].subject for i, _ in admin.entries("gemini", ["unread"])]
    assert told == ["your message to codex was set aside"]


def test_a_role_adds_only_its_own_events_and_changes_none(
        url: str, gemini_sql: psycopg.Connection[object], codex_mail: Message) -> None:
    """The events log is the receipts ``status`` shows: gemini's role cannot say codex
    read claude's message, nor rewrite or remove a receipt anyone wrote."""
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        gemini_sql.execute("INSERT INTO events (record) VALUES (%s)", (json.dumps(
            {"ts": "2026-12-01T09:00:00+00:00", "event": "done", "id": codex_mail.id,
             "agent": "codex"}),))
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        gemini_sql.execute("INSERT INTO events (record, written_by) VALUES (%s, 'codex')",
                           ('{"event": "read", "agent": "codex"}',))
    assert gemini_sql.execute("UPDATE events SET record = replace(record, 'delivered', "
                              "'done')").rowcount == 0
    assert gemini_sql.execute("DELETE FROM events").rowcount == 0
    claude = Mailbox(open_store(url), Identity("claude", "--agent"))
    assert [(r.agent, r.state, r.done_at) for r in claude.status(codex_mail.id).recipients
            ] == [("codex", "unread", None)]
    # its own receipts it still adds, through mailslot
    gemini = Mailbox(open_store(as_role(url, "gemini")), Identity("gemini", "--agent"))
    mine = claude.send("gemini", "for gemini", "x")
    gemini.done([mine.id])
    done = claude.status(mine.id).recipients
    assert [(r.agent, r.state, r.done_at is not None) for r in done] == [
        ("gemini", "done", True)]


@pytest.fixture
def forgeries(url: str) -> tuple[Message, Message]:
    """Bob's role writes, by direct SQL, a message to carol and a broadcast whose
    headers say they are from alice; the rows' bound sender (what the policies check)
    is bob, as it must be."""
    admin = open_store(url)
    for name in ("alice", "bob", "carol"):
        admin.grant(name)
    Mailbox(admin, Identity("alice", "--agent")).send("carol", "real", "from alice")
    letter = make_message(sender="alice", to=("carol",), subject="wire the money", n=1)
    news = make_message(sender="alice", to=("all",), subject="new payee", n=2)
    with psycopg.connect(as_role(url, "bob"), autocommit=True) as conn:
        conn.execute("INSERT INTO mail (agent, id, state, data, sender) VALUES "
                     "('carol', %s, 'unread', %s, 'bob')", (letter.id, to_bytes(letter)))
        conn.execute("INSERT INTO broadcasts (id, live, data, sender) VALUES "
                     "(%s, true, %s, 'bob')", (news.id, to_bytes(news)))
    return letter, news


def test_a_forged_sender_is_never_shown_to_a_reader(
        url: str, forgeries: tuple[Message, Message]) -> None:
    letter, news = forgeries
    env = {**os.environ, "MAILSLOT_STORE": as_role(url, "carol")}
    hook = run_cli("hook", "claude", "session-start", "--agent", "carol",
                   stdin=fixture("claude-session-start"), env=env)
    assert hook.returncode == 0 and "from alice" in hook.stdout
    assert "wire the money" not in hook.stdout and "new payee" not in hook.stdout
    carol = Mailbox(open_store(as_role(url, "carol")), Identity("carol", "--agent"))
    shown = [i.message.subject for i in carol.inbox()]
    assert shown == ["real"]
    for forged in (letter, news):
        with pytest.raises(MailslotError):
            carol.read(forged.id)
    alice = Mailbox(open_store(url), Identity("alice", "--agent"))
    assert [s.message.subject for s in alice.sent()] == ["real"]


def test_a_forged_sender_is_quarantined_and_doctor_names_it(
        url: str, forgeries: tuple[Message, Message]) -> None:
    """Plain doctor, before anyone read them: both found, set aside (kept, not
    deleted), and named until the administrator deals with them."""
    letter, news = forgeries
    report = run_cli("doctor", "--store", url)
    assert report.returncode == 1
    for forged in (letter, news):
        [line] = [p for p in report.stdout.splitlines() if forged.id in p]
        assert "from 'alice'" in line and "bound it to 'bob'" in line, line
    with psycopg.connect(url) as conn:
        held = conn.execute("SELECT agent, id, data FROM quarantine ORDER BY id").fetchall()
        assert held == [("carol", letter.id, to_bytes(letter)), ("", news.id, to_bytes(news))]
        assert conn.execute("SELECT count(*) FROM mail WHERE id = %s", (letter.id,)
                            ).fetchone() == (0,)
    again = run_cli("doctor", "--store", url)
    assert again.returncode == 1 and letter.id in again.stdout


def test_a_role_changes_only_the_state_of_its_mail(
        url: str, forgeries: tuple[Message, Message]) -> None:
    """Carol's role cannot rewrite its own copy to say it is from alice (her sent
    list and status would show it), nor a broadcast's text."""
    with psycopg.connect(as_role(url, "carol"), autocommit=True) as conn:
        for sql in ("UPDATE mail SET sender = 'alice'", "UPDATE mail SET data = ''",
                    "UPDATE mail SET agent = 'alice'"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql)  # type: ignore[arg-type]
    with (psycopg.connect(as_role(url, "bob"), autocommit=True) as conn,
          pytest.raises(psycopg.errors.InsufficientPrivilege)):
        conn.execute("UPDATE broadcasts SET data = ''")


# The loop governor's buckets -------------------------------------------------------------
WAKES_BOB = {"owner": "sarah", "agents": {"bob": {
    "wake_on_mail": True, "wake_method": "command", "command": ["true"]}}}


def queued(admin: Store, message_id: str) -> list[str]:
    return [e["event"] for e in admin.events()
            if e.get("id") == message_id and e["event"].startswith("wake_")]


def test_a_role_writes_only_its_own_agents_buckets(url: str) -> None:
    """Two noisy roles spend their own shares of bob's wakes, and carol still wakes him.
    As alice's role, every bucket of the others (their sends, their wakes of bob, the
    old shared ``wakes.bob``) is read but never changed, removed or made; carol still
    wakes bob after alice tried, and alice's own buckets are hers."""
    admin = open_store(url)
    put_config(admin, WAKES_BOB)
    for name in ("alice", "bob", "carol", "noisy1", "noisy2"):
        admin.grant(name)  # type: ignore[attr-defined]
    for name in ("noisy1", "noisy2"):
        noisy = Mailbox(open_store(as_role(url, name)), Identity(name, "--agent"))
        woken = [queued(admin, noisy.send("bob", f"n{n}", "x", new=True).id)
                 for n in range(31)]
        assert woken.count(["wake_queued"]) == 30  # its own bucket's
    carol = Mailbox(open_store(as_role(url, "carol")), Identity("carol", "--agent"))
    bob = Mailbox(open_store(as_role(url, "bob")), Identity("bob", "--agent"))
    assert queued(admin, carol.send("bob", "hi", "x", wake=True).id) == ["wake_queued"]
    bob.send("carol", "hi", "x")
    with psycopg.connect(url, autocommit=True) as conn:  # a key of no sender: the admin's
        conn.execute("INSERT INTO buckets VALUES ('wakes.bob', 60, 0) "
                     "ON CONFLICT DO NOTHING")
    theirs = ["sends.bob", "sends.bob.carol", "sends.carol", "sends.carol.bob",
              "wakes.bob.carol", "wakes.bob", "sends.noisy1", "sends.noisy1.bob",
              "wakes.bob.noisy1", "sends.noisy2", "sends.noisy2.bob", "wakes.bob.noisy2",
              *(f"sends.{name}.-bytes" for name in ("bob", "carol", "noisy1", "noisy2"))]
    with psycopg.connect(as_role(url, "alice"), autocommit=True) as conn:
        keys = [k for (k,) in conn.execute("SELECT key FROM buckets ORDER BY key")]
        assert keys == sorted(theirs)  # read: a wake's share counts bob's senders
        for sql in ("UPDATE buckets SET tokens = -1e12, at = 1e18",
                    "UPDATE buckets SET tokens = -1e12 WHERE key LIKE 'wakes.bob%'",
                    "DELETE FROM buckets"):
            assert conn.execute(sql).rowcount == 0  # type: ignore[arg-type]
        for key in [*theirs, "wakes.bob.noisy", "sends.noisy", "wakes.carol.bob"]:
            for sql in ("INSERT INTO buckets VALUES (%s, -1e12, 1e18)",
                        "INSERT INTO buckets VALUES (%s, -1e12, 1e18) ON CONFLICT (key) "
                        "DO UPDATE SET tokens = excluded.tokens"):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute(sql, (key,))  # type: ignore[arg-type]
        conn.execute("INSERT INTO buckets VALUES ('wakes.bob.alice', 1, 1)")  # its own
        assert conn.execute("DELETE FROM buckets WHERE key = 'wakes.bob.alice'"
                            ).rowcount == 1
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM buckets WHERE tokens < 0").fetchone() == (0,)
    assert queued(admin, carol.send("bob", "again", "y", wake=True).id) == ["wake_queued"]


def test_an_older_database_gets_the_bucket_policies_by_migration(pg_cluster: Cluster) -> None:
    from mailslot.backends.postgres.pg_schema import MIGRATIONS
    from test_postgres import at_version

    url = pg_cluster.new_database(init=False)
    before = next(n for n, sql in enumerate(MIGRATIONS) if "buckets_own" in sql)
    with psycopg.connect(url, autocommit=True) as conn:
        at_version(conn, before)
        conn.execute("INSERT INTO buckets VALUES ('wakes.bob.carol', 2, 0)")
    upgraded = run_cli("init", "--store", url)
    assert upgraded.returncode == 0, upgraded.stderr
    open_store(url).grant("alice")  # type: ignore[attr-defined]
    with psycopg.connect(as_role(url, "alice"), autocommit=True) as conn:
        assert conn.execute("SELECT key, tokens FROM buckets").fetchall() == [
            ("wakes.bob.carol", 2.0)]  # kept as it was
        assert conn.execute("UPDATE buckets SET tokens = -1e12").rowcount == 0
