"""The PostgreSQL store beyond the contract suite: creating the schema, choosing the
store from the command line, and moving a mailbox between stores (on a real server)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import psycopg
import pytest

from hookkit import fixture
from mailslot import Mailbox
from mailslot.access.identity import Identity
from mailslot.backends import open_store
from mailslot.backends.postgres.pg_schema import LATEST
from mailslot.core.errors import StoreError
from mailslot.core.message import to_bytes
from mailslot.core.query import Search, parse, words_of
from mailslot.store import WakeEntry
from mailslot.wake.claims import Queue, notifier_queue
from pgcluster import Cluster
from support import files_in, make_message, run_cli


@pytest.fixture
def url(pg_cluster: Cluster) -> str:
    return pg_cluster.new_database()


@pytest.fixture
def bare(pg_cluster: Cluster) -> str:
    """A database mailslot never ran in."""
    return pg_cluster.new_database(init=False)


def test_init_creates_the_schema_once_even_from_two_machines_at_once(bare: str) -> None:
    url = bare
    racers = [subprocess.Popen([sys.executable, "-m", "mailslot", "init", "--store", url],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
              for _ in range(4)]
    outs = [racer.communicate(timeout=60) for racer in racers]
    assert [racer.returncode for racer in racers] == [0] * 4, outs
    said = [re.fullmatch(rf"{url}: schema at version {LATEST} \((\d+) migrations? applied\)\n",
                         out.decode()) for out, _ in outs]
    assert all(said), outs
    assert sum(int(m[1]) for m in said if m) == LATEST  # each applied exactly once
    again = run_cli("init", "--store", url)
    assert again.returncode == 0 and "(0 migrations applied)" in again.stdout
    with psycopg.connect(url) as conn:
        versions = conn.execute("SELECT version FROM mailslot_schema ORDER BY 1").fetchall()
    assert versions == [(n,) for n in range(1, LATEST + 1)]


def at_version(conn: psycopg.Connection[object], version: int) -> None:
    """Make the schema as a mailslot of that version left it."""
    from mailslot.backends.postgres.pg_schema import MIGRATIONS

    conn.execute("CREATE TABLE mailslot_schema (version integer PRIMARY KEY, "
                 "applied timestamptz NOT NULL DEFAULT now())")
    for number, sql in enumerate(MIGRATIONS[:version], start=1):
        conn.execute(sql)  # type: ignore[arg-type]
        conn.execute("INSERT INTO mailslot_schema (version) VALUES (%s)", (number,))


def _tables(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE "
                                           "schemaname = 'public'").fetchall()]


@pytest.mark.parametrize(("command", "reads"), [
    (("--agent", "claude", "send", "--to", "gemini", "--subject", "s", "--body", "b"), False),
    (("--agent", "gemini", "inbox"), True),
    (("doctor",), True),
    (("who",), True),
    (("config", "show"), True),
    (("pg", "grant", "gemini"), False),
])
def test_a_database_without_the_schema_is_refused_and_left_untouched(
        bare: str, command: tuple[str, ...], reads: bool) -> None:
    """A URL to the wrong database (the maintenance database ``postgres``, a typo) never
    gets mailslot's tables: only ``mailslot init`` makes them. A command that only
    reads says so as it does of a folder that holds no mailbox."""
    result = run_cli("--store", bare, *command)
    assert result.returncode == 1, result
    if reads:
        assert result.stderr == (f"mailslot: error: no mailbox at {bare}: mailslot init "
                                 f"{bare}, or check --store/MAILSLOT_STORE\n")
    else:
        assert result.stderr == (f"mailslot: error: no mailslot mailbox at {bare} (it has "
                                 "no mailslot schema); nothing was written: run mailslot "
                                 f"init --store {bare} to create one there\n")
    assert _tables(bare) == []
    assert run_cli("init", bare).returncode == 0  # the URL as init's own word
    assert "mail" in _tables(bare)
    report = run_cli("--store", bare, "doctor")
    assert report.returncode == 0 and report.stdout.splitlines()[-1].startswith(
        "checked: the schema's version, the rows whose sender looks forged, the "
        "quarantine table"), report
    assert "folder" not in report.stdout


@pytest.mark.parametrize("command", ["migrate", "restore"])
def test_migrate_and_restore_fill_a_database_without_the_schema_only_with_init(
        bare: str, tmp_path: Path, command: str) -> None:
    """``restore --into`` and ``migrate --to`` the maintenance database, or any other
    database ``mailslot init`` never ran in, create nothing there; ``--init`` makes it a
    mailbox first."""
    source = tmp_path / "mailbox"
    assert run_cli("--dir", str(source), "--agent", "claude", "send", "--to", "gemini",
                   "--subject", "s", "--body", "b").returncode == 0
    backup = tmp_path / "mail.tar.gz"
    assert run_cli("--dir", str(source), "backup", str(backup)).returncode == 0
    argv = ["migrate", "--from", str(source), "--to", bare] if command == "migrate" \
        else ["restore", str(backup), "--into", bare]
    refused = run_cli(*argv)
    assert refused.returncode == 1, refused
    assert refused.stderr == (f"mailslot: error: no mailslot mailbox at {bare} (it has no "
                              "mailslot schema); nothing was written: run mailslot init "
                              f"--store {bare} first, or add --init\n")
    assert _tables(bare) == []
    made = run_cli(*argv, "--init")
    assert made.returncode == 0, made.stderr
    assert "1 messages" in made.stdout or "1 message" in made.stdout, made.stdout
    assert run_cli("--store", bare, "--agent", "gemini", "inbox").stdout.count("claude") == 1


def test_the_cli_sends_and_reads_through_MAILSLOT_STORE(url: str) -> None:
    env = {**os.environ, "MAILSLOT_STORE": url}
    sent = run_cli("--agent", "claude", "send", "--to", "gemini", "--subject", "hi",
                   "--body", "over the network", env=env)
    assert sent.returncode == 0, sent.stderr
    inbox = run_cli("--agent", "gemini", "inbox", "--json", env=env)
    assert [m["subject"] for m in json.loads(inbox.stdout)] == ["hi"]
    # --store beats MAILSLOT_STORE: an empty folder has no mail for gemini
    (Path.cwd() / "box").mkdir(mode=0o700)
    elsewhere = run_cli("--store", str(Path.cwd() / "box"), "--agent", "gemini", "inbox",
                        "--json", env=env)
    assert json.loads(elsewhere.stdout) == []


def test_an_unreachable_database_is_one_clear_line() -> None:
    result = run_cli("--store", "postgresql://nobody@127.0.0.1:1/none", "--agent", "claude",
                     "send", "--to", "gemini", "--subject", "s", "--body", "b")
    assert result.returncode == 1
    assert result.stderr.startswith("mailslot: error: ")
    assert "cannot reach the database at postgresql://nobody@127.0.0.1:1/none" in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_a_password_never_shows_in_the_location() -> None:
    store = open_store("postgresql://ann:s3cret@db.example:5433/mail")
    assert store.location == "postgresql://ann@db.example:5433/mail"


def _contents(root: Path) -> dict[str, bytes]:
    """Every message file under ``agents/`` and ``broadcast/``, by its place."""
    found = {}
    for top in ("agents", "broadcast"):
        for path in sorted((root / top).rglob("*.md")):
            found[str(path.relative_to(root))] = path.read_bytes()
    return found


def test_files_to_postgres_to_files_is_byte_identical_and_idempotent(
        url: str, tmp_path: Path) -> None:
    first = tmp_path / "first"
    claude = Mailbox(open_store(str(first)), Identity("claude", "--agent"))
    gemini = Mailbox(open_store(str(first)), Identity("gemini", "--agent"))
    one = claude.send(["gemini", "codex"], "plan", "step one\n\n  indented\ttab ü")
    two = claude.send("gemini", "second", "---\nnot a header\n", expect_reply=True)
    claude.send("codex", "empty", "")
    gemini.read(one.id)
    gemini.done([two.id])
    kept = claude.broadcast("freeze", "main is frozen")
    gone = claude.broadcast("old", "never mind")
    claude.retract(gone.id)
    gemini.read(kept.id)  # a broadcast read: a seen set
    first_store = open_store(str(first))
    first_store.update_config(lambda c: c.update(owner="sarah") is None)
    first_store.set_accept("gemini", "members")
    first_store.set_member("gemini", "claude", True)
    first_store.add_passed("gemini", [one.id, two.id])
    first_store.set_accept("codex", "group:red")  # a group gate, its members
    first_store.set_member("+red", "claude", True)
    first_store.add_instance_mail("gemini", one.id, "s1")  # and the index of instance mail
    notifier_queue(first_store, 2).enqueue(WakeEntry(one.id, "gemini", attempt=3))
    started = {"ts": "2026-12-01T08:00:00+00:00", "launcher": "codex", "prompt": "go ✓"}
    first_store.log_session(started)

    copied = run_cli("migrate", "--from", str(first), "--to", url)
    assert copied.returncode == 0, copied.stderr
    assert "4 messages" in copied.stdout and "2 broadcasts" in copied.stdout
    again = run_cli("migrate", "--from", str(first), "--to", url, "--json")
    assert json.loads(again.stdout) == {"copied": {}, "unreadable": []}

    back = tmp_path / "back"
    assert run_cli("migrate", "--from", url, "--to", str(back)).returncode == 0
    assert _contents(back) == _contents(first)
    assert files_in(back / "broadcast" / "retracted") == [f"{gone.id}.md"]
    assert files_in(back / "broadcast" / "live") == [f"{kept.id}.md"]
    assert (back / "broadcast" / "seen" / "gemini").read_text().split() == \
        (first / "broadcast" / "seen" / "gemini").read_text().split()
    assert json.loads((back / "config.json").read_text()) == first_store.load_config()
    events = [e["event"] for e in open_store(str(back)).events()]
    assert events == [e["event"] for e in first_store.events()]
    returned = open_store(str(back))
    assert (returned.accept_of("gemini"), returned.members("gemini")) == ("members", ["claude"])
    assert returned.passed("gemini") == {one.id, two.id}
    assert (returned.accept_of("codex"), returned.members("+red")) == ("group:red", ["claude"])
    assert returned.instance_mail("gemini") == {one.id: "s1"}
    notices = notifier_queue(returned, 2).pending("gemini")
    assert [(e.message_id, e.attempt) for e in notices] == [(one.id, 3)]
    assert notifier_queue(returned, 1).agents() == Queue(returned).agents() == []
    assert returned.started_sessions() == [started]


def test_an_agent_role_reads_only_its_mail_and_sends_only_as_itself(
        url: str, pg_cluster: Cluster) -> None:
    admin = open_store(url)
    claude = Mailbox(admin, Identity("claude", "--agent"))
    to_gemini = claude.send("gemini", "for gemini", "x")
    to_codex = claude.send("codex", "for codex", "secret")
    granted = run_cli("--store", url, "pg", "grant", "gemini")
    assert granted.returncode == 0 and "role mailslot_gemini" in granted.stdout
    assert run_cli("--store", url, "pg", "grant", "gemini").returncode == 0  # twice: fine
    as_gemini = url.replace("postgres@", "mailslot_gemini@")
    with psycopg.connect(as_gemini, autocommit=True) as conn:
        rows = conn.execute("SELECT agent, id FROM mail").fetchall()
        assert rows == [("gemini", to_gemini.id)]  # codex's copy is invisible
        assert conn.execute("UPDATE mail SET state = 'done' WHERE agent = 'codex'"
                            ).rowcount == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("INSERT INTO mail (agent, id, state, data, sender) VALUES "
                         "('codex', 'forged', 'unread', '', 'claude')")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("UPDATE config SET data = '{}'")
    # the store as gemini's role works for gemini, and cannot send as another
    gemini = Mailbox(open_store(as_gemini), Identity("gemini", "--agent"))
    assert [i.message.id for i in gemini.inbox()] == [to_gemini.id]
    gemini.send("claude", "reply", "ok")
    forged = Mailbox(open_store(as_gemini), Identity("codex", "--agent"))
    with pytest.raises(StoreError, match="permission denied"):
        forged.send("claude", "forged", "x")
    assert admin.state_of("codex", to_codex.id) == "unread"


def test_pg_grant_on_a_folder_is_one_clear_line() -> None:
    result = run_cli("pg", "grant", "gemini")
    assert result.returncode == 2
    assert result.stderr == ("mailslot: error: pg grant needs a postgresql:// store "
                             "(--store URL or MAILSLOT_STORE)\n")


def test_a_dropped_connection_is_made_again_and_the_send_goes_through_once(
        url: str, pg_cluster: Cluster) -> None:
    """The connection died since the last call (the server's administrator
    ended it); the next send connects again by itself. The server down for good is
    tests/test_pg_failure.py."""
    store = open_store(url)
    box = Mailbox(store, Identity("claude", "--agent"))
    first = box.send("gemini", "before", "x")
    database = url.rsplit("/", 1)[1]
    pg_cluster.admin("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                     f"datname = '{database}' AND pid <> pg_backend_pid()")
    second = box.send("gemini", "after", "x")
    ids = sorted(i for i, _ in store.entries("gemini", ["unread"]))
    assert ids == sorted([first.id, second.id])  # once each


def test_a_watch_reconnects_by_itself_and_looks_again(url: str, pg_cluster: Cluster) -> None:
    store = open_store(url)
    kicked = threading.Event()
    watching = store.watch(kicked.set, mail_for="gemini")
    try:
        database = url.rsplit("/", 1)[1]
        pg_cluster.admin("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                         f"datname = '{database}' AND pid <> pg_backend_pid()")
        assert kicked.wait(60)  # reconnected: a kick, since mail may have come meanwhile
        kicked.clear()
        Mailbox(open_store(url), Identity("claude", "--agent")).send("gemini", "s", "x")
        assert kicked.wait(60)
    finally:
        watching.close()


def test_a_session_hook_shows_mail_from_the_database_and_never_fails(url: str) -> None:
    Mailbox(open_store(url), Identity("claude", "--agent")).send("gemini", "over the wire", "x")
    env = {**os.environ, "MAILSLOT_STORE": url}
    shown = run_cli("hook", "claude", "session-start", "--agent", "gemini",
                    stdin=fixture("claude-session-start"), env=env)
    assert shown.returncode == 0 and "over the wire" in shown.stdout
    down = {**env, "MAILSLOT_STORE": "postgresql://nobody@127.0.0.1:1/none"}
    silent = run_cli("hook", "claude", "session-start", "--agent", "gemini",
                     stdin=fixture("claude-session-start"), env=down)
    assert (silent.returncode, silent.stdout) == (0, "")


def test_an_upgrade_keeps_queued_wakes_and_gives_granted_roles_the_new_tables(
        bare: str) -> None:
    """A database at schema 4 with a queued wake and an agent role granted then: after
    `mailslot init` the wake is still queued (in the wake queue, not a notifier's) and
    the role can record its latest session, a table that did not exist when granted."""
    url = bare
    m = make_message(sender="claude", to=("gemini",))
    with psycopg.connect(url, autocommit=True) as conn:
        at_version(conn, 4)
        conn.execute("INSERT INTO wakes (agent, id, attempt, not_before) VALUES "
                     "('gemini', %s, 2, 0)", (m.id,))
        conn.execute("INSERT INTO mail (agent, id, state, data, sender) VALUES ('gemini', "
                     "%s, 'unread', %s, 'claude')", (m.id, to_bytes(m)))
        conn.execute("DO $$ BEGIN CREATE ROLE mailslot_gemini LOGIN; EXCEPTION WHEN "
                     "duplicate_object THEN NULL; END $$")
        conn.execute("INSERT INTO agent_roles VALUES ('mailslot_gemini', 'gemini')")
    before = run_cli("--store", url, "--agent", "gemini", "inbox")
    assert before.returncode == 1
    assert before.stderr == (f"mailslot: error: the database at {url} has schema version 4, "
                             f"older than this mailslot's ({LATEST}); nothing was written: "
                             f"run mailslot init --store {url} to upgrade it\n")
    upgraded = run_cli("init", "--store", url)
    assert upgraded.returncode == 0 and f"({LATEST - 4} migration" in upgraded.stdout
    with psycopg.connect(url) as conn:  # init built the search of the older mail
        assert conn.execute("SELECT id FROM search").fetchall() == [(m.id,)]
    store = open_store(url)
    assert [(e.message_id, e.attempt) for e in Queue(store).pending("gemini")] == [(m.id, 2)]
    assert notifier_queue(store, 0).pending("gemini") == []
    as_gemini = open_store(url.replace("postgres@", "mailslot_gemini@"))
    as_gemini.set_latest_session("gemini", "codex", "019a-new")
    assert store.latest_session("gemini", "codex") == "019a-new"
    as_gemini.log_session({"launcher": "codex", "outcome": "background"})
    assert store.started_sessions() == [{"launcher": "codex", "outcome": "background"}]
    word = words_of(m.body)[0]
    assert store.search(Search(match=parse(word))) == [m.id]  # mail from before search


def test_an_agent_role_finds_only_what_it_may_read(url: str) -> None:
    admin = open_store(url)
    claude = Mailbox(admin, Identity("claude", "--agent"))
    mine = claude.send("gemini", "zebra for gemini", "x")
    claude.send("codex", "zebra for codex", "secret")
    news = claude.broadcast("zebra for all", "y")
    assert run_cli("--store", url, "pg", "grant", "gemini").returncode == 0
    as_gemini = open_store(url.replace("postgres@", "mailslot_gemini@"))
    found = as_gemini.search(Search(match=parse("zebra")))
    assert sorted(found) == sorted([mine.id, news.id])  # codex's copy stays invisible
    sent = Mailbox(as_gemini, Identity("gemini", "--agent")).send("claude", "zebra back", "z")
    assert sent.id in as_gemini.search(Search(match=parse("zebra")))


def test_a_planted_latest_session_is_never_handed_to_a_wake(url: str) -> None:
    """The table is shared by every agent role: a value that is not a session key (an
    option, say) written there by direct SQL reads as no session at all."""
    store = open_store(url)
    store.set_latest_session("gemini", "codex", "019a-real")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE latest_sessions SET session = '--dangerously-bypass' "
                     "WHERE agent = 'gemini'")
    assert store.latest_session("gemini", "codex") is None


def test_an_upgrade_from_8_binds_the_roles_granted_before_it(bare: str) -> None:
    """A role granted at schema 8 (UPDATE on all of ``mail``, the events log open) is
    bound by what `mailslot init` adds: it may still mark its mail, but no longer
    rewrite a sender, forge a receipt or slip mail past a gate; a forged row already
    there is found by plain doctor and set aside."""
    url = bare
    role = url.replace("postgres@", "mailslot_gemini@")
    mine = make_message(sender="claude", to=("gemini",))
    forged = make_message(sender="claude", to=("gemini",), subject="forged", n=1)
    with psycopg.connect(url, autocommit=True) as conn:
        at_version(conn, 8)
        conn.execute("DO $$ BEGIN CREATE ROLE mailslot_gemini LOGIN; EXCEPTION WHEN "
                     "duplicate_object THEN NULL; END $$")
        conn.execute("INSERT INTO agent_roles VALUES ('mailslot_gemini', 'gemini')")
        conn.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON mail, broadcasts, events, "
                     "quarantine, gates, members, passed TO mailslot_gemini")
        conn.execute("GRANT USAGE ON SEQUENCE events_seq_seq TO mailslot_gemini")
        conn.execute("INSERT INTO mail (agent, id, state, data, sender) VALUES ('gemini', "
                     "%s, 'unread', %s, 'claude')", (mine.id, to_bytes(mine)))
        conn.execute("INSERT INTO gates VALUES ('codex', 'members')")
    with psycopg.connect(role, autocommit=True) as conn:  # at 8, this went through
        conn.execute("INSERT INTO mail (agent, id, state, data, sender) VALUES ('gemini', "
                     "%s, 'unread', %s, 'gemini')", (forged.id, to_bytes(forged)))
    assert run_cli("init", "--store", url).returncode == 0
    report = run_cli("doctor", "--store", url)
    assert report.returncode == 1 and forged.id in report.stdout, report
    with psycopg.connect(role, autocommit=True) as conn:
        assert conn.execute("UPDATE mail SET state = 'read' WHERE id = %s", (mine.id,)
                            ).rowcount == 1
        for sql in ("UPDATE mail SET sender = 'codex'",
                    "INSERT INTO events (record) VALUES ('{\"event\": \"done\", "
                    "\"agent\": \"codex\"}')",
                    "INSERT INTO mail (agent, id, state, data, sender) VALUES ('codex', "
                    "'x', 'unread', '', 'gemini')"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql)  # type: ignore[arg-type]
        assert conn.execute("SELECT id FROM quarantine").fetchall() == [(forged.id,)]
