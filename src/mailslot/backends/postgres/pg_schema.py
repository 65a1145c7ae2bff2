"""The PostgreSQL store's schema, as numbered migrations.

Each migration runs in its own transaction under one advisory lock, after reading the
version the database is at: running ``mailslot init`` twice, or from two machines at
once, applies each migration exactly once. A migration is never edited once released;
a change is a new one appended to :data:`MIGRATIONS`.
"""

from __future__ import annotations

from typing import Any

MIGRATIONS: tuple[str, ...] = (
    # 1: everything the file store keeps, one table per kind of thing.
    """
    CREATE TABLE mail (
        agent text NOT NULL,
        id text NOT NULL,
        state text NOT NULL CHECK (state IN ('unread', 'read', 'done')),
        data bytea NOT NULL,
        PRIMARY KEY (agent, id));
    CREATE TABLE archived_mail (
        box text NOT NULL, agent text NOT NULL, id text NOT NULL,
        state text NOT NULL, data bytea NOT NULL, PRIMARY KEY (box, id));
    CREATE TABLE quarantine (
        agent text NOT NULL, id text NOT NULL, data bytea NOT NULL,
        PRIMARY KEY (agent, id));
    CREATE TABLE broadcasts (id text PRIMARY KEY, live boolean NOT NULL, data bytea NOT NULL);
    CREATE TABLE seen (agent text NOT NULL, id text NOT NULL, PRIMARY KEY (agent, id));
    CREATE TABLE events (seq bigserial PRIMARY KEY, record text NOT NULL);
    CREATE TABLE config (one boolean PRIMARY KEY DEFAULT true CHECK (one), data text NOT NULL);
    CREATE TABLE presence (
        agent text NOT NULL, key text NOT NULL, record text NOT NULL,
        PRIMARY KEY (agent, key));
    CREATE TABLE wakes (
        agent text NOT NULL, id text NOT NULL, claim text NOT NULL DEFAULT '',
        attempt integer NOT NULL, not_before double precision NOT NULL,
        PRIMARY KEY (agent, id, claim));
    CREATE TABLE shown (
        agent text NOT NULL, session text NOT NULL, id text NOT NULL,
        touched timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (agent, session, id));
    CREATE TABLE waiters (
        agent text NOT NULL, session text NOT NULL, pid integer NOT NULL,
        touched timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (agent, session));
    CREATE TABLE claims (agent text PRIMARY KEY, path text NOT NULL);
    """,
    # 2: registered agents, one JSON record each (never the secret itself).
    """
    CREATE TABLE registry (name text PRIMARY KEY, record bytea NOT NULL);
    """,
    # 3: row-level security for agent roles (``mailslot pg grant``): a role reads and
    # moves only its agent's copies and inserts only messages its agent sent. The owner
    # (the admin role that runs migrations) is not bound by the policies.
    """
    ALTER TABLE mail ADD COLUMN sender text NOT NULL DEFAULT '';
    CREATE TABLE agent_roles (role name PRIMARY KEY, agent text NOT NULL);
    CREATE FUNCTION mailslot_me() RETURNS text LANGUAGE sql STABLE SECURITY DEFINER
        SET search_path FROM CURRENT
        AS $$ SELECT agent FROM agent_roles WHERE role = session_user $$;
    ALTER TABLE mail ENABLE ROW LEVEL SECURITY;
    CREATE POLICY mail_read ON mail FOR SELECT USING (agent = mailslot_me());
    CREATE POLICY mail_move ON mail FOR UPDATE USING (agent = mailslot_me());
    CREATE POLICY mail_send ON mail FOR INSERT WITH CHECK (sender = mailslot_me());
    """,
    # 4: gates, admitted members, access requests, what passed a gate, and
    # replaced (fenced) sessions.
    """
    CREATE TABLE gates (agent text PRIMARY KEY, accept text NOT NULL);
    CREATE TABLE members (agent text NOT NULL, member text NOT NULL,
        PRIMARY KEY (agent, member));
    CREATE TABLE requests (agent text NOT NULL, requester text NOT NULL, id text NOT NULL,
        PRIMARY KEY (agent, requester));
    CREATE TABLE passed (agent text NOT NULL, id text NOT NULL, PRIMARY KEY (agent, id));
    CREATE TABLE fences (agent text NOT NULL, session text NOT NULL, by_session text NOT NULL,
        PRIMARY KEY (agent, session));
    """,
    # 5: each agent's latest session per host, the log of sessions
    # mailslot started (one JSON record each, like events), and the notifier queues
    # beside the wake queue: a wake row names its queue ('wake' or 'notify-N'), part of
    # its key, so queues never share an entry or a claim.
    """
    CREATE TABLE latest_sessions (agent text NOT NULL, host text NOT NULL,
        session text NOT NULL, PRIMARY KEY (agent, host));
    CREATE TABLE session_log (seq bigserial PRIMARY KEY, record text NOT NULL);
    ALTER TABLE wakes ADD COLUMN queue text NOT NULL DEFAULT 'wake';
    ALTER TABLE wakes DROP CONSTRAINT wakes_pkey, ADD PRIMARY KEY (queue, agent, id, claim);
    """,
    # 6: search, one row per message written in the delivery's transaction
    # (the words of its subject, weight A, and body, weight B), under row-level security
    # as mail is: a role finds only what its agent was sent, sent, or was broadcast. A
    # store with mail already is marked for a rebuild (``search_stale``): by ``init``, or
    # the first search.
    """
    CREATE TABLE search (
        id text PRIMARY KEY, sender text NOT NULL, recipients text[] NOT NULL,
        utc text NOT NULL, thread text NOT NULL, words tsvector NOT NULL);
    CREATE INDEX search_words ON search USING gin (words);
    CREATE INDEX search_thread ON search (thread);
    CREATE INDEX search_utc ON search (utc);
    ALTER TABLE search ENABLE ROW LEVEL SECURITY;
    CREATE POLICY search_read ON search FOR SELECT USING (mailslot_me() = ANY (recipients)
        OR sender = mailslot_me() OR recipients = '{all}');
    CREATE POLICY search_add ON search FOR INSERT WITH CHECK (sender = mailslot_me());
    CREATE TABLE search_stale (one boolean PRIMARY KEY DEFAULT true CHECK (one));
    INSERT INTO search_stale SELECT WHERE EXISTS (SELECT FROM mail)
        OR EXISTS (SELECT FROM broadcasts);
    """,
    # 7: the host sessions the hooks ran in, one JSON record each, touched
    # at every hook call; and mail for one session of an agent (name@session).
    """
    CREATE TABLE hook_sessions (agent text NOT NULL, session text NOT NULL,
        record text NOT NULL, touched timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (agent, session));
    CREATE TABLE instance_mail (agent text NOT NULL, id text NOT NULL,
        session text NOT NULL, touched timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (agent, id));
    """,
    # 8: row-level security on every table with per-agent data, so an agent
    # role (``mailslot pg grant``) reads and changes only its own agent's rows by direct
    # SQL too. What another agent's process must write for a delivery (a wake, a notice,
    # what passed a gate, an access request) it may insert only for a message it sent.
    # A broadcast names its sender, and only the sender retracts it. A role may also
    # write mailslot's own notices (sender 'mailslot': a gate's answer, a set-aside
    # message, a refused wake), each row naming the role's agent that wrote it
    # (``written_by``), never another agent's name. The events log (ids, names and
    # outcomes, never a message's text) stays readable by every role.
    """
    ALTER TABLE mail ADD COLUMN written_by text DEFAULT mailslot_me();
    DROP POLICY mail_send ON mail;
    CREATE POLICY mail_send ON mail FOR INSERT WITH CHECK (
        written_by IS NOT DISTINCT FROM mailslot_me()
        AND (sender = mailslot_me() OR sender = 'mailslot'));
    ALTER TABLE search ADD COLUMN written_by text DEFAULT mailslot_me();
    DROP POLICY search_add ON search;
    CREATE POLICY search_add ON search FOR INSERT WITH CHECK (
        written_by IS NOT DISTINCT FROM mailslot_me()
        AND (sender = mailslot_me() OR sender = 'mailslot'));
    DROP POLICY search_read ON search;
    CREATE POLICY search_read ON search FOR SELECT USING (mailslot_me() = ANY (recipients)
        OR sender = mailslot_me() OR recipients = '{all}' OR written_by = mailslot_me());
    CREATE FUNCTION mailslot_sent(recipient text, message text) RETURNS boolean
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT
        AS $$ SELECT EXISTS (SELECT FROM mail WHERE agent = recipient AND id = message
                                    AND sender = mailslot_me()) $$;
    CREATE FUNCTION mailslot_foreign(recipient text, message text) RETURNS boolean
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT
        AS $$ SELECT EXISTS (SELECT FROM mail WHERE agent = recipient AND id = message
                                    AND sender IS DISTINCT FROM mailslot_me()) $$;
    ALTER TABLE broadcasts ADD COLUMN sender text NOT NULL DEFAULT '';
    ALTER TABLE session_log ADD COLUMN agent text DEFAULT mailslot_me();
    ALTER TABLE archived_mail ENABLE ROW LEVEL SECURITY;
    ALTER TABLE quarantine ENABLE ROW LEVEL SECURITY;
    CREATE POLICY quarantine_own ON quarantine FOR ALL USING (agent = mailslot_me())
        WITH CHECK (agent = mailslot_me());
    CREATE POLICY mail_set_aside ON mail FOR DELETE USING (agent = mailslot_me());
    ALTER TABLE broadcasts ENABLE ROW LEVEL SECURITY;
    CREATE POLICY broadcasts_read ON broadcasts FOR SELECT USING (true);
    CREATE POLICY broadcasts_send ON broadcasts FOR INSERT
        WITH CHECK (sender = mailslot_me());
    CREATE POLICY broadcasts_retract ON broadcasts FOR UPDATE
        USING (sender = mailslot_me());
    ALTER TABLE presence ENABLE ROW LEVEL SECURITY;
    CREATE POLICY presence_read ON presence FOR SELECT USING (true);
    CREATE POLICY presence_own ON presence FOR ALL USING (agent = mailslot_me())
        WITH CHECK (agent = mailslot_me());
    ALTER TABLE wakes ENABLE ROW LEVEL SECURITY;
    CREATE POLICY wakes_own ON wakes FOR ALL USING (agent = mailslot_me())
        WITH CHECK (agent = mailslot_me());
    CREATE POLICY wakes_sent ON wakes FOR INSERT WITH CHECK (mailslot_sent(agent, id));
    ALTER TABLE instance_mail ENABLE ROW LEVEL SECURITY;
    CREATE POLICY instance_mail_own ON instance_mail FOR ALL USING (agent = mailslot_me())
        WITH CHECK (agent = mailslot_me());
    CREATE POLICY instance_mail_sent ON instance_mail FOR INSERT
        WITH CHECK (mailslot_sent(agent, id));
    ALTER TABLE passed ENABLE ROW LEVEL SECURITY;
    CREATE POLICY passed_own ON passed FOR ALL USING (agent = mailslot_me())
        WITH CHECK (agent = mailslot_me());
    CREATE POLICY passed_sent ON passed FOR INSERT
        WITH CHECK (NOT mailslot_foreign(agent, id));
    ALTER TABLE requests ENABLE ROW LEVEL SECURITY;
    CREATE POLICY requests_own ON requests FOR ALL
        USING (agent = mailslot_me() OR requester = mailslot_me())
        WITH CHECK (agent = mailslot_me() OR requester = mailslot_me());
    ALTER TABLE session_log ENABLE ROW LEVEL SECURITY;
    CREATE POLICY session_log_own ON session_log FOR ALL USING (agent = mailslot_me())
        WITH CHECK (agent = mailslot_me());
    """ + "".join(f"""
    ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;
    CREATE POLICY {table}_own ON {table} FOR ALL USING (agent = mailslot_me())
        WITH CHECK (agent = mailslot_me());""" for table in (
        "seen", "shown", "waiters", "claims", "latest_sessions", "fences")) + "".join(f"""
    ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;
    CREATE POLICY {table}_read ON {table} FOR SELECT USING (true);
    CREATE POLICY {table}_own ON {table} FOR ALL USING (agent = mailslot_me())
        WITH CHECK (agent = mailslot_me());""" for table in (
        "gates", "members", "hook_sessions")),
    # 9: row-level security on the events log, the receipts ``status`` shows. A role
    # adds only events about itself (the record's ``agent`` is its agent: its sends,
    # reads, dones, replies), plus the wake and notifier lines of a message it delivered
    # itself (their ``agent`` is the recipient, as the sender's process queues them);
    # each row names the role's agent that wrote it (``written_by``). No role changes or
    # removes an event. Every role still reads the whole log (ids, names and outcomes).
    """
    ALTER TABLE events ADD COLUMN written_by text DEFAULT mailslot_me();
    ALTER TABLE events ENABLE ROW LEVEL SECURITY;
    CREATE POLICY events_read ON events FOR SELECT USING (true);
    CREATE POLICY events_add ON events FOR INSERT WITH CHECK (
        written_by IS NOT DISTINCT FROM mailslot_me()
        AND (record::jsonb ->> 'agent' = mailslot_me()
             OR (record::jsonb ->> 'event' IN ('wake_queued', 'wake_skipped',
                                               'notify_queued', 'notify_skipped')
                 AND mailslot_sent(record::jsonb ->> 'agent', record::jsonb ->> 'id'))));
    """,
    # 10: the sender a reader shows is the one the database bound. A row whose header
    # names another sender than its ``sender`` column is refused by every reader and set
    # aside in the quarantine with the reason (``reason``), which ``doctor`` reports. So
    # that no role can rebind its own copies, a role may change only a message's state
    # (a broadcast's: only whether it is live), never its text, sender or mailbox.
    """
    ALTER TABLE quarantine ADD COLUMN reason text;
    DO $$ DECLARE r name; BEGIN
        FOR r IN SELECT role FROM agent_roles WHERE role IN (SELECT rolname FROM pg_roles)
        LOOP
            EXECUTE format('REVOKE UPDATE ON mail FROM %I', r);
            EXECUTE format('REVOKE UPDATE, DELETE ON broadcasts FROM %I', r);
            EXECUTE format('GRANT UPDATE (state) ON mail TO %I', r);
            EXECUTE format('GRANT UPDATE (live) ON broadcasts TO %I', r);
        END LOOP; END $$;
    """,
    # 11: gates, enforced where the rows are written. A message an agent role inserts
    # into a gated inbox (``gates``: anything but 'open') is refused unless its sender
    # passes the gate as mailslot.access.gates says: the inbox's own agent, mailslot's notices,
    # the config's owner, an admitted member (of the agent, or of its group ``+GROUP``),
    # a registered parent or child; or it is an access request recorded (``requests``)
    # before its delivery; or a reply (``reply_to``, the id it answers) to a message the
    # inbox's agent sent its sender, or broadcast. What ``passed`` says does not let a
    # row in: a role may write that for its own message. The admin role is not bound.
    """
    ALTER TABLE mail ADD COLUMN reply_to text;
    CREATE FUNCTION mailslot_gate() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
        SET search_path FROM CURRENT AS $$
    DECLARE
        accept text := (SELECT g.accept FROM gates g WHERE g.agent = NEW.agent);
        gate text := NEW.agent;
    BEGIN
        IF mailslot_me() IS NULL OR accept IS NULL OR accept = 'open'
           OR NEW.sender IN (NEW.agent, 'mailslot') THEN
            RETURN NEW;
        END IF;
        IF accept LIKE 'group:%' THEN
            gate := '+' || substr(accept, 7);
        END IF;
        IF EXISTS (SELECT FROM members m WHERE m.agent = gate AND m.member = NEW.sender)
           OR NEW.sender = (SELECT c.data::jsonb ->> 'owner' FROM config c)
           OR EXISTS (SELECT FROM registry r WHERE
                      (r.name = NEW.sender AND convert_from(r.record, 'UTF8')::jsonb
                                                   ->> 'parent' = NEW.agent)
                      OR (r.name = NEW.agent AND convert_from(r.record, 'UTF8')::jsonb
                                                     ->> 'parent' = NEW.sender))
           OR EXISTS (SELECT FROM requests q WHERE q.agent = gate
                      AND q.requester = NEW.sender AND q.id = NEW.id)
           OR EXISTS (SELECT FROM mail o WHERE o.agent = NEW.sender AND o.id = NEW.reply_to
                      AND o.sender = NEW.agent)
           OR EXISTS (SELECT FROM broadcasts b WHERE b.id = NEW.reply_to
                      AND b.sender = NEW.agent) THEN
            RETURN NEW;
        END IF;
        RAISE EXCEPTION '% accepts mail only from admitted members, and % is not one',
            NEW.agent, NEW.sender USING ERRCODE = 'insufficient_privilege',
            HINT = 'ask first: mailslot join ' || NEW.agent;
    END $$;
    CREATE TRIGGER mail_gate BEFORE INSERT ON mail FOR EACH ROW
        EXECUTE FUNCTION mailslot_gate();
    """,
    # 12: the loop governor's token buckets (mailslot.mail.governor). ``tokens`` NULL:
    # full. (Each bucket's writer is bound by migration 15.)
    """
    CREATE TABLE buckets (key text PRIMARY KEY, tokens double precision,
                          at double precision);
    """,
    # 13: keys marked once (a ladder notice is sent by the first to mark its key)
    """
    CREATE TABLE once (key text PRIMARY KEY, at timestamptz NOT NULL DEFAULT now());
    """,
    # 14: listings that touch only what they show, however much mail is done: open mail
    # by state (the inbox lists unread and read only), the done count from an index,
    # an agent's correspondents by a skip scan, and what a sender sent, newest first.
    """
    CREATE INDEX mail_by_state ON mail (agent, state, id);
    CREATE INDEX mail_by_sender ON mail (sender, id);
    CREATE INDEX mail_correspondents ON mail (agent, sender);
    CREATE INDEX broadcasts_by_sender ON broadcasts (sender, id);
    """,
    # 15: row-level security on the governor's buckets. Every bucket is one sender's own
    # (``sends.A``, ``sends.A.B``, ``wakes.B.A``: A's; mailslot.mail.governor): a role
    # reads them all (a wake's share counts the senders of its agent) but writes only
    # its own agent's, so no agent spends, empties or removes another's budget. A key
    # of no sender (the old ``wakes.B``, which no mailslot takes from any more) is the
    # admin role's alone. No row changes.
    """
    CREATE FUNCTION mailslot_bucket_owner(key text) RETURNS text LANGUAGE sql IMMUTABLE
        AS $$ SELECT CASE split_part(key, '.', 1)
                     WHEN 'sends' THEN nullif(split_part(key, '.', 2), '')
                     WHEN 'wakes' THEN nullif(split_part(key, '.', 3), '') END $$;
    ALTER TABLE buckets ENABLE ROW LEVEL SECURITY;
    CREATE POLICY buckets_read ON buckets FOR SELECT USING (true);
    CREATE POLICY buckets_own ON buckets FOR ALL
        USING (mailslot_bucket_owner(key) = mailslot_me())
        WITH CHECK (mailslot_bucket_owner(key) = mailslot_me());
    """,
    # 16: what peers keep (store/namespaces.py, ``peers.*``): a table a namespace, each
    # record one JSON object. The admin role's alone: no agent role is granted them (mail
    # for a peer is carried by the owner's watcher, which opens the store as admin).
    """
    CREATE TABLE peer_node (one boolean PRIMARY KEY DEFAULT true CHECK (one),
                            record text NOT NULL);
    CREATE TABLE peer_known (node text PRIMARY KEY, record text NOT NULL);
    CREATE TABLE peer_links (node text PRIMARY KEY, record text NOT NULL);
    CREATE TABLE peer_outbox (node text NOT NULL, item text NOT NULL, record text NOT NULL,
                              PRIMARY KEY (node, item));
    CREATE TABLE peer_sent (agent text NOT NULL, id text NOT NULL, record text NOT NULL,
                            PRIMARY KEY (agent, id));
    CREATE TABLE peer_received (node text NOT NULL, envelope text NOT NULL,
                                record text NOT NULL, PRIMARY KEY (node, envelope));
    CREATE TABLE peer_progress (node text PRIMARY KEY, record text NOT NULL);
    """,
    # 17: a session's showings that await its host's record (the ``seen`` rung:
    # mailslot.service.delivery.SessionMarks), each its agent's own as ``shown`` is.
    """
    CREATE TABLE marks (
        agent text NOT NULL, session text NOT NULL, word text NOT NULL,
        touched timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (agent, session, word));
    ALTER TABLE marks ENABLE ROW LEVEL SECURITY;
    CREATE POLICY marks_own ON marks FOR ALL USING (agent = mailslot_me())
        WITH CHECK (agent = mailslot_me());
    """,
)
LATEST = len(MIGRATIONS)
_LOCK = "SELECT pg_advisory_xact_lock(hashtext('mailslot schema'))"


def schema_version(conn: Any) -> int | None:
    """The version the database is at; ``None`` when mailslot never ran there. One
    round trip (a hook pays for each): the table missing is the error, not a second
    query first (only where a failed statement aborts nothing: autocommit, or a
    transaction that made the table already)."""
    from psycopg import errors

    try:
        row = conn.execute("SELECT coalesce(max(version), 0) FROM mailslot_schema"
                           ).fetchone()
    except errors.UndefinedTable:
        return None
    return int(row[0])


def migrate(conn: Any) -> int:
    """Bring the schema to :data:`LATEST` (``conn`` in autocommit mode); return how
    many migrations were applied. Safe to run twice and from two machines at once."""
    applied = 0
    for number, sql in enumerate(MIGRATIONS, start=1):
        with conn.transaction():
            conn.execute(_LOCK)
            conn.execute("CREATE TABLE IF NOT EXISTS mailslot_schema (version integer "
                         "PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())")
            if (schema_version(conn) or 0) >= number:
                continue
            conn.execute(sql)
            conn.execute("INSERT INTO mailslot_schema (version) VALUES (%s)", (number,))
            if number == LATEST:  # every table of SHARED exists only now
                _regrant(conn)
            applied += 1
    return applied


def _regrant(conn: Any) -> None:
    """Give the agent roles granted before a migration what it added (a new shared
    table), so upgrading never locks an agent out of a part of the store."""
    if not conn.execute("SELECT to_regclass('agent_roles') IS NOT NULL").fetchone()[0]:
        return
    for (role,) in conn.execute("SELECT role FROM agent_roles WHERE role IN "
                                "(SELECT rolname FROM pg_roles)").fetchall():
        _privileges(conn, role)


SHARED = ("seen", "events", "presence", "wakes", "shown", "marks", "waiters", "claims",
          "gates", "members", "requests", "passed", "fences", "latest_sessions",
          "session_log", "hook_sessions", "instance_mail", "buckets", "once")
"""Tables every agent role reads and writes whole, under their row-level policies
(``mail`` and ``broadcasts`` are granted apart)."""
READ_ONLY = ("config", "registry", "mailslot_schema", "search_stale")
"""Tables an agent role may read but only the admin role changes."""


def grant(conn: Any, agent: str) -> str:
    """Create (or refresh) the login role ``mailslot_<agent>`` for one agent, bound by
    the row-level policies of migration 3; return the role's name."""
    from psycopg import sql

    role = f"mailslot_{agent}"
    with conn.transaction():
        conn.execute(_LOCK)
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        _privileges(conn, role)
        conn.execute("INSERT INTO agent_roles VALUES (%s, %s) ON CONFLICT (role) DO UPDATE "
                     "SET agent = excluded.agent", (role, agent))
    return role


def _privileges(conn: Any, role: str) -> None:
    """Grant ``role`` what an agent role may do (again: granting twice is harmless)."""
    from psycopg import sql

    who = sql.Identifier(role)
    schema = conn.execute("SELECT current_schema(), current_database()").fetchone()
    conn.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(
        sql.Identifier(schema[1]), who))
    conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(
        sql.Identifier(schema[0]), who))
    # only a message's state, a broadcast's liveness: never its text or sender (mig. 10)
    conn.execute(sql.SQL("GRANT SELECT, INSERT, UPDATE (state) ON mail TO {}").format(who))
    conn.execute(sql.SQL("GRANT SELECT, INSERT, UPDATE (live) ON broadcasts TO {}").format(
        who))
    # a gated inbox's door sets its own strays aside (store.quarantine; migration 7)
    conn.execute(sql.SQL("GRANT DELETE ON mail TO {}").format(who))
    conn.execute(sql.SQL("GRANT SELECT, INSERT ON quarantine TO {}").format(who))
    conn.execute(sql.SQL("GRANT SELECT, INSERT ON search TO {}").format(who))
    for table in SHARED:
        conn.execute(sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON {} TO {}").format(
            sql.Identifier(table), who))
    for table in READ_ONLY:
        conn.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(sql.Identifier(table), who))
    for sequence in ("events_seq_seq", "session_log_seq_seq"):
        conn.execute(sql.SQL("GRANT USAGE ON SEQUENCE {} TO {}").format(
            sql.Identifier(sequence), who))
