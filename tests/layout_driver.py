"""Build one mailbox the same way every time, for tests/test_layout_unchanged.py.

Run as ``python layout_driver.py ROOT COPY`` with ``PYTHONPATH`` naming the mailslot
whose file layout is wanted: it fills the file store at ``ROOT`` through the public API
(``Mailbox``, ``FileStore``, ``open_store``) and the store's own methods, then migrates
it into the folder ``COPY``. Everything that would differ between two runs is fixed
first: the clock (``time.time``, ``datetime.now``) stands still between the driver's
steps, and random bytes come from counters (one for message ids, one for everything
else, so a version that stages one file more or less still makes the same ids).
"""

from __future__ import annotations

import hashlib
import os
import sys
import time

NOW = [4070908800.0]  # 2099-01-01: later than any folder's time, so every listing is kept
_COUNTS = {"ids": 0, "other": 0}


def _bytes(kind: str, size: int) -> bytes:
    _COUNTS[kind] += 1
    return hashlib.sha256(f"{kind}{_COUNTS[kind]}".encode()).digest()[:size]


def _fix_the_world() -> None:
    """Time and randomness, fixed before mailslot is imported (modules bind them)."""
    time.time = lambda: NOW[0]
    time.time_ns = lambda: int(NOW[0] * 1e9)
    os.urandom = lambda size: _bytes("other", size)
    from mailslot.core import dates, ids

    class Fixed(dates.datetime):
        @classmethod
        def now(cls, tz=None):  # type: ignore[no-untyped-def, override]
            return cls.fromtimestamp(NOW[0], tz or dates.UTC)

    dates.datetime = Fixed

    class IdBytes:
        def __getattr__(self, name: str) -> object:
            return getattr(os, name)

        @staticmethod
        def urandom(size: int) -> bytes:
            return _bytes("ids", size)

    ids.os = IdBytes()  # type: ignore[assignment]


def tick(seconds: float = 2.0) -> None:
    NOW[0] += seconds


def build(root: str) -> None:
    from mailslot import FileStore, Mailbox, open_store
    from mailslot.store import AgentRecord

    store = FileStore(root)
    store.init()
    config = {"owner": "sarah", "watcher": {"on_demand": False},
              "agents": {"gemini": {"wake_on_mail": True, "wake_method": "command",
                                    "command": ["/bin/true", "{id}"]},
                         "codex": {"notify": [{"kind": "command", "command": ["/bin/true"]},
                                              {"kind": "bank"}]}}}
    store.update_config(lambda raw: raw.update(config) is None)
    env = {"HOME": root, "PATH": os.environ.get("PATH", "")}

    def box(agent: str) -> Mailbox:
        return Mailbox.open(root, agent, env=env)

    sent = []
    for n in range(4):
        tick()
        sent.append(box("claude").send("gemini", f"Plan {n}", f"Body {n}\nline two"))
    tick()
    both = box("claude").send(["gemini", "codex"], "To both", "hello", expect_reply=True)
    tick()
    box("gemini").read(sent[0].id)
    box("gemini").done([sent[1].id])
    tick()
    reply = box("gemini").reply(sent[2].id, "Thanks")
    tick()
    news = box("sarah").broadcast("Freeze", "no deploys")
    gone = box("sarah").broadcast("Oops", "ignore")
    box("sarah").retract(gone.id)
    tick()
    box("codex").read(both.id)
    box("codex").done([both.id])
    box("claude").read(reply.id)

    # The gate: codex asks, gemini admits, then codex writes.
    gemini = box("gemini")
    gemini.gate.switch(True)
    tick()
    request = box("codex").gate.join("gemini", "may I write?")
    gemini.gate.admit("codex")
    tick()
    box("codex").send("gemini", "Admitted", "thanks", new=True)
    box("claude").gate.switch(True, "team")
    box("claude").gate.switch(False, "team")
    store.set_request("gemini", "claude", request.id)
    store.set_request("gemini", "claude", None)
    store.set_member("gemini", "claude", True)
    store.set_member("gemini", "claude", False)

    # Per-session state, presence, the registry, fences, marks and the session log.
    store.add_seen("gemini", [news.id])
    store.add_shown("gemini", "s-1", [sent[0].id, sent[1].id])
    store.add_shown("gemini", "s-1", [sent[2].id])
    store.record_hook_session("gemini", "s-1", {"host": "claude", "pid": 7, "cwd": "/w"})
    store.refresh_hook_session("gemini", "s-1")
    store.record_hook_session("codex", "s-2", {"host": "codex", "note": "ünïcode"})
    store.set_latest_session("gemini", "codex", "019a-first")
    store.set_latest_session("gemini", "codex", "019a-second")
    store.claim("gemini", "/work/gemini")
    store.claim("gemini", "/work/other")
    store.claim("codex", "/work/codex")
    store.replace_claim("codex", "/work/codex2")
    store.set_waiter("gemini", "s-1", 4242)
    store.set_waiter("gemini", "s-1", 4243)
    store.add_instance_mail("gemini", sent[3].id, "s-1")
    store.write_presence("gemini", "host-1", {"pid": 1, "since": "x"})
    store.write_presence("gemini", "host-2", {"pid": 2})
    store.write_presence("codex", "host-3", {"pid": 3})
    store.remove_presence("gemini", "host-2")
    secret = "sha256:" + "0" * 64
    parent = AgentRecord("claude", secret, runtime="claude-code",
                         created="2099-01-01T00:00:00+00:00")
    store.register_agent(parent)
    store.register_agent(AgentRecord("reviewer", secret, parent="claude", parent_generation=1,
                                     created="2099-01-01T00:00:00+00:00"))
    store.replace_registered(AgentRecord("claude", secret, generation=2,
                                         created="2099-01-01T00:00:00+00:00"))
    store.fence("gemini", "s-0", "s-1")
    store.fence("gemini", "s-0", "s-9")
    store.mark_once("notify-read-x")
    store.log_session({"launcher": "claude", "outcome": "background", "prompt": "hi ✓"})
    store.log_session({"launcher": "codex", "outcome": "failed"})
    store.update_buckets(["sends.claude.gemini", "wakes.gemini.claude"],
                         lambda held: held.update({"wakes.gemini.claude": (1.5, NOW[0])})
                         is None)
    store.prune_sessions("codex", older_than=-1)  # codex's sessions go, gemini's stay

    # The watcher's work: wakes claimed and run (a command), notices banked.
    from mailslot.wake.notify import NotifyRunner
    from mailslot.wake.runner import WakeRunner

    tick()
    WakeRunner(store).run_agent("gemini")
    NotifyRunner(store, 1).run_agent("codex")

    # Month archives of done mail, a quarantined message, a mailbox set aside.
    tick()
    store.archive_done("2100-01-01_000000")
    store.quarantine("gemini", sent[3].id)
    tick()
    box("sarah").send("temp", "For a while", "then gone", new=True)
    box("sarah").remove_agent("temp")
    assert open_store(root).exists()


def main() -> None:
    root, copy = sys.argv[1], sys.argv[2]
    _fix_the_world()
    build(root)
    from mailslot.keep.transfer import migrate

    tick()
    migrate(root, copy)


if __name__ == "__main__":
    main()
