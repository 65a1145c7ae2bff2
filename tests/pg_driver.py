"""Write a PostgreSQL mailbox, or read all of it back, for tests/test_pg_unchanged.py.

``python pg_driver.py write URL`` fills the database at ``URL`` through the store's own
methods (as the mailslot on ``PYTHONPATH`` has them); ``python pg_driver.py read URL``
prints, as one JSON object, everything a store reads back from it: mail, broadcasts,
the logs and every kind of record. Run by two versions of mailslot, what they print must
be the same: today's databases open, and read, without a migration of their data.
"""

from __future__ import annotations

import json
import sys
from typing import Any

AGENTS = ("claude", "codex", "gemini")


def write(url: str) -> None:
    from mailslot import Mailbox, open_store
    from mailslot.access.identity import Identity
    from mailslot.store import AgentRecord, WakeEntry

    store = open_store(url)
    store.init()  # as that mailslot makes its schema
    store.update_config(lambda raw: raw.update({"owner": "sarah"}) is None)
    claude = Mailbox(store, Identity("claude", "--agent"))
    one = claude.send(["gemini", "codex"], "plan", "step one ü", new=True)
    two = claude.send("gemini", "second", "step two", new=True)
    news = claude.broadcast("freeze", "main is frozen")
    Mailbox(store, Identity("gemini", "--agent")).read(one.id)
    store.add_seen("gemini", [news.id])
    store.add_shown("gemini", "s1", [one.id, two.id])
    store.record_hook_session("gemini", "s1", {"host": "claude", "pid": 7})
    store.add_instance_mail("gemini", two.id, "s1")
    store.set_latest_session("gemini", "codex", "019a-first")
    store.claim("gemini", "/work/gemini")
    store.set_waiter("gemini", "s1", 4242)
    store.write_presence("gemini", "host-1", {"pid": 1})
    store.register_agent(AgentRecord("reviewer", "sha256:" + "0" * 64,
                                     created="2026-12-01T07:00:00+00:00"))
    store.set_accept("gemini", "members")
    store.set_accept("claude", "members")
    store.set_accept("claude", "open")  # an old mailslot kept an 'open' row
    store.set_accept("alice", "group:team")
    store.set_member("+team", "codex", True)
    store.set_request("gemini", "codex", two.id)
    store.add_passed("gemini", [one.id])
    store.fence("gemini", "s0", "s1")
    store.mark_once("notify-read-x")
    store.update_buckets(["sends.claude.gemini"], lambda held: held.update(
        {"sends.claude.gemini": (2.5, 100.0)}) is None)
    store.log_session({"launcher": "codex", "prompt": "go ✓"})
    entry = WakeEntry(one.id, "gemini", attempt=2, not_before=5.0)
    try:
        from mailslot.wake.claims import Queue, notifier_queue
    except ImportError:  # a mailslot before the queue was the wake feature's
        store.wake_enqueue(entry)
        store.notify_queue(3).wake_enqueue(entry)
    else:
        Queue(store).enqueue(entry)
        notifier_queue(store, 3).enqueue(entry)


def read(url: str) -> dict[str, Any]:
    from mailslot import open_store
    from mailslot.core.message import STATES

    store = open_store(url)
    try:
        from mailslot.wake.claims import Queue, notifier_queue
        queues = [Queue(store), notifier_queue(store, 3)]
        pending = [[vars(e) for q in queues for e in q.pending(a)] for a in AGENTS]
    except ImportError:
        pending = [[vars(e) for q in (store, store.notify_queue(3)) for e in q.wake_pending(a)]
                   for a in AGENTS]
    return {
        "mail": {a: sorted(store.entries(a, STATES)) for a in store.agent_names()},
        "bodies": sorted(store.load(a, i)[0].body for a in store.agent_names()
                         for i, _ in store.entries(a, STATES)),
        "broadcasts": [store.broadcast_ids(), store.broadcast_ids(live=False)],
        "config": store.load_config(),
        "events": [e["event"] for e in store.events()],
        "sessions started": store.started_sessions(),
        "seen": {a: sorted(store.seen(a)) for a in AGENTS},
        "shown": sorted(store.shown("gemini", "s1")),
        "hook sessions": [{k: v for k, v in r.items() if k != "seen"}
                          for r in store.hook_sessions()],
        "instances": store.instance_mail("gemini"),
        "latest": store.latest_session("gemini", "codex"),
        "claim": store.claim("gemini", "/elsewhere"),
        "waiter": [store.waiter("gemini", "s1"), store.waiter_pids("gemini")],
        "presence": store.presence(),
        "registry": [vars(r) for r in store.registered_agents()],
        "gates": [store.gated(), {a: store.accept_of(a) for a in (*AGENTS, "alice")},
                  store.members("+team"), store.requests("gemini"),
                  sorted(store.passed("gemini"))],
        "fence": store.fenced_by("gemini", "s0"),
        "once": store.mark_once("notify-read-x"),
        "buckets": store.bucket_group("sends.claude"),
        "queued": store.queued_agents(),
        "pending": pending,
        "counts": [store.count_done("gemini"), store.count_unread("gemini", 5),
                   sorted(store.correspondents("gemini")), store.sent_ids("claude")],
    }


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2])
    elif sys.argv[1] == "init":
        from mailslot import open_store

        open_store(sys.argv[2]).init()
    else:
        print(json.dumps(read(sys.argv[2]), sort_keys=True, default=str))
