"""The store's roles: the methods of :class:`~mailslot.store.base.Store` beyond the
primitives, grouped by concern, each built once on the primitives.

Data, not classes: :class:`~.base.Store` is two (the defaults a backend may override for
speed, :class:`~.base.Fallbacks`, and the rest; a class per role cost every hook a
millisecond of start-up), and this grouping is what people and tests read.
``tests/test_store_contract.py`` has one class of tests per role and checks that every
method of ``Store`` is in exactly one role; ``tests/test_architecture_doc.py`` checks
docs/architecture.md's table against it. Not loaded by mailslot at run time.
"""

from __future__ import annotations

ROLES: dict[str, tuple[str, tuple[str, ...]]] = {
    "MailReads": (
        "what is known of directed mail without reading it: states, where a message is, "
        "done and unread counts, correspondents, what one sent (kept counts in the file "
        "store, indexes in PostgreSQL)",
        ("state_of", "path_of", "count_done", "count_unread", "correspondents",
         "sent_ids")),
    "SeenSets": (
        "which broadcasts each agent has been served (`seen`)",
        ("seen", "add_seen")),
    "ConfigAndEvents": (
        "the config (`config`: one locked writer, `update_config`), the events log, keys "
        "marked once (`once`: the ladder's one notice)",
        ("load_config", "update_config", "append_event", "events", "mark_once")),
    "SessionLog": (
        "the log of sessions mailslot started, and the launch lock (`launch`)",
        ("log_session", "started_sessions", "launch_lock")),
    "Upkeep": (
        "what `doctor` looks at and repairs: staging, problems, unreadable messages, "
        "counts kept, permissions (defaults: nothing to report)",
        ("staging", "remove_staging", "problems", "repair_counts", "fix_permissions",
         "unreadable")),
    "Presence": (
        "running MCP servers (`presence`)",
        ("write_presence", "presence", "remove_presence")),
    "Sessions": (
        "per-session delivery state: what a session was shown (`shown`), hook sessions, "
        "mail for one session (`instances`), latest sessions, claims, waiters; forgetting "
        "a session",
        ("shown", "shown_at", "add_shown", "prune_sessions", "refresh_hook_session",
         "record_hook_session", "hook_sessions", "add_instance_mail", "instance_mail",
         "set_latest_session", "latest_session", "claim", "replace_claim", "set_waiter",
         "waiter", "waiter_pids")),
    "Queues": (
        "which agents have queued or claimed entries, by queue (`wake`, `wake.claimed`; "
        "the queue's rules are `wake/claims.py`)",
        ("queued_agents",)),
    "Registry": (
        "registered agents (`registry`)",
        ("register_agent", "registered", "registered_agents", "replace_registered")),
    "Gates": (
        "gated inboxes: accept (and every gated inbox), members, requests, passed ids "
        "(`accept`, `members`, `requests`, `passed`)",
        ("set_accept", "accept_of", "gated", "set_member", "members", "set_request",
         "requests", "add_passed", "passed")),
    "Fences": (
        "replaced sessions (`fences`)",
        ("fence", "fenced_by")),
    "Limits": (
        "the loop governor's token buckets (`limits`: one locked update; a group read "
        "without locking)",
        ("update_buckets", "bucket_group")),
    "Searching": (
        "search, reindex, and the index's catching up (default: every message read)",
        ("search", "reindex", "catch_up_index", "unsearched")),
    "Archives": (
        "the owner's month archives of done mail (default: refused, nothing archived)",
        ("archive_done", "restore_archived", "archive_months", "archived", "archived_ids")),
}
"""Each role: what it holds (the namespaces it reads and writes), and its methods."""
