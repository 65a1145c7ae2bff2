"""``mailslot hook HOST EVENT`` of a host's background waiter (``asyncRewake``).

A host that has one (:attr:`~mailslot.host_registry.host.Host.wake_hook`) runs this command hook
in the background after every turn (``install HOST --hooks --wake`` registers it on the
stop event). It blocks until directed mail arrives that the session has not been shown,
then writes a short notice to stderr and exits with the host's wake status: the host
wakes the session at once, even when idle, and shows the notice as a system reminder.
The notice names senders and ids only; the mail itself reaches the model framed, when
it reads it.

It waits only where the host says a waiter may (not in a headless run the host would
keep alive for it). It watches the host process itself, not its parent: hooks run as
``/bin/sh -c CMD`` and dash does not exec, so the parent is a shell that outlives it.

It wakes only when the agent's config chooses it (the host's ``--wake`` method with
``wake_on_mail``; ``install HOST --hooks --wake`` sets both). Exactly one waiter per
session: a newer one records itself and the older one leaves (exit 0). When the wake
the config chooses is one the watcher tries first (a step of the ladder with a
``grace``: a host's own door into the session), the waiter is its fallback: it leaves
new mail that long to the watcher, and wakes only for what is still unannounced.
On any error,
with no identity or no mailbox, when the host is gone, or when the host ends it at the
hook's ``timeout``, it exits 0 and says nothing, so a broken mailbox can never wake a
session. See docs/wake.md.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Mapping
from typing import TextIO

from ...access.identity import derive_identity
from ...backends import open_store
from ...core.names import check_name
from ...mail.invocation import invocation
from ...service.delivery import Delivery
from ...wake.notice import wake_notice
from . import host_io
from .host_process import alive, host_process
from .reading import read_input

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ...host_registry import Host

CHECK_SECONDS = 1.0
"""With file-system events: how often to check that the host and the lock still stand."""
POLL_SECONDS = 0.1
"""Without file-system events: how often to look for mail."""


def run_wait(host: Host, *, agent: str | None, root: str | None,
             env: Mapping[str, str] = os.environ, stdin: TextIO | None = None,
             stderr: TextIO | None = None) -> int:
    """Block until there is mail to wake for (the host's wake status) or a reason to stop
    (exit 0)."""
    try:
        return _wait(host, agent, root, env,
                     stdin if stdin is not None else sys.stdin,
                     stderr if stderr is not None else sys.stderr)
    except BaseException:  # a waiter never disturbs a session, whatever happened
        return 0


def _wait(host: Host, agent: str | None, root: str | None, env: Mapping[str, str],
          stdin: TextIO, stderr: TextIO) -> int:
    if not host.waiter_rungs or not host.waits(env):
        return 0  # a headless run would not exit while a waiter runs
    payload = host_io.parse_payload(read_input(stdin))
    session = payload.get("session_id")
    if host_io.caller_of(host, payload, env) is not host or not isinstance(session, str):
        return 0  # a host borrowing these hooks does not wake on it; only a session can be
    identity = derive_identity(agent, env)
    if identity is None:
        return 0
    name = check_name(identity.name)
    store = open_store(root, env)
    if not store.exists():
        return 0
    cli = invocation(name, store.location, env)
    delivery = Delivery(store, name, identity, cli)
    rung = next((r for r in host.waiter_rungs
                 if delivery.unannounced(session, r.method) is not None), None)
    if rung is None:
        return 0  # the agent's config does not choose a wake it serves: nothing to wait for
    # stderr is what the host shows the model: only the notice may reach it, never a
    # library's log line (watchdog logs its own thread trouble there by default).
    logging.getLogger().addHandler(logging.NullHandler())
    me, process = os.getpid(), host_process()
    delivery.arm_waiter(session, me)
    kick = threading.Event()
    watching = store.watch(kick.set, mail_for=name, waiters_of=name)
    tools = host.tools(env)
    first_seen: dict[str, float] = {}  # with a grace: when each message was first found
    try:
        while True:
            kick.clear()
            if delivery.waiter_replaced(session, me) or not alive(process):
                return 0
            mail = delivery.unannounced(session, rung.method)
            if mail is None:
                return 0  # the agent's config does not (or no longer) choose this wake
            now = time.monotonic()
            due = [m for m in mail if now - first_seen.setdefault(m.id, now) >= rung.grace]
            if due:  # the watcher's wake did not announce them within the grace
                note = host.answer_note(tools, host.bridged(str(store.location), env))
                stderr.write(wake_notice(name, due, cli, tools.format("read_messages"))
                             + (f" {note}" if note else "") + "\n")
                stderr.flush()
                delivery.announce(session, due, host.name)
                return host.waiter_exit
            wait = CHECK_SECONDS if watching is not None else POLL_SECONDS
            if mail:  # look again when the oldest one's grace is over
                wait = min(wait, rung.grace - (now - min(first_seen[m.id] for m in mail)))
            kick.wait(max(wait, 0.01))
    finally:
        if watching is not None:
            watching.close()
