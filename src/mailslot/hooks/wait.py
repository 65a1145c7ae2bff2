"""``mailslot hook claude wait``: Claude Code's background waiter (``asyncRewake``).

Claude Code runs this command hook in the background after every turn (it is
registered on ``Stop``). It blocks until directed mail arrives that the session has not
been shown, then writes a short notice to stderr and exits 2: Claude Code wakes the
session at once, even when idle, and shows the notice as a system reminder. The notice
names senders and ids only; the mail itself reaches the model framed, when it reads it.

It waits only in an interactive session: under ``claude -p`` (``CLAUDE_CODE_ENTRYPOINT``
is ``sdk-cli``) it leaves at once, because Claude Code waits for background hooks before
a headless run exits, and a run that is over cannot be woken anyway (docs/claude-wake.md).
It watches the Claude Code process itself, not its parent: Claude Code runs hooks as
``/bin/sh -c CMD`` and dash does not exec, so the parent is a shell that outlives Claude.

It wakes only when the agent's config chooses it (``wake_method: "claude-rewake"`` with
``wake_on_mail``; ``mailslot install claude --hooks --wake`` sets both). Exactly one
waiter per session: a newer one records itself and the older one leaves
(exit 0). On any error, with no identity or no mailbox, when the host is gone, or when
Claude Code ends it at the hook's ``timeout``, it exits 0 and says nothing, so a broken
mailbox can never wake a session. See docs/wake.md, "claude-rewake".
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Mapping
from typing import TextIO

from ..access.identity import derive_identity
from ..core.names import check_name
from ..service.delivery import Delivery
from ..service.invocation import invocation
from ..store.location import open_store
from ..wake.notice import wake_notice
from . import host_io
from .host import alive, host_process
from .reading import read_input

METHOD = "claude-rewake"
"""The ``wake_method`` that lets this waiter wake its session (config.json)."""
REWAKE_EXIT = 2
"""Claude Code wakes the session when an ``asyncRewake`` hook exits with this code."""
CHECK_SECONDS = 1.0
"""With file-system events: how often to check that the host and the lock still stand."""
POLL_SECONDS = 0.1
"""Without file-system events: how often to look for mail."""
HEADLESS = "sdk-cli"
"""``CLAUDE_CODE_ENTRYPOINT`` under ``claude -p``: no waiter there."""


def run_wait(*, agent: str | None, root: str | None, env: Mapping[str, str] = os.environ,
             stdin: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Block until there is mail to wake for (exit 2) or a reason to stop (exit 0)."""
    try:
        return _wait(agent, root, env, stdin if stdin is not None else sys.stdin,
                     stderr if stderr is not None else sys.stderr)
    except BaseException:  # a waiter never disturbs a session, whatever happened
        return 0


def _wait(agent: str | None, root: str | None, env: Mapping[str, str], stdin: TextIO,
          stderr: TextIO) -> int:
    if env.get("CLAUDE_CODE_ENTRYPOINT") == HEADLESS:
        return 0  # claude -p would not exit while a waiter runs
    payload = host_io.parse_payload(read_input(stdin))
    session = payload.get("session_id")
    if host_io.caller_of("claude", payload, env) != "claude" or not isinstance(session, str):
        return 0  # only Claude Code wakes on exit 2, and only a session can be woken
    identity = derive_identity(agent, env)
    if identity is None:
        return 0
    name = check_name(identity.name)
    store = open_store(root, env)
    if not store.exists():
        return 0
    cli = invocation(name, store.location, env)
    delivery = Delivery(store, name, identity, cli)
    if delivery.unannounced(session, METHOD) is None:
        return 0  # the agent's config does not choose this wake: nothing to wait for
    # stderr is what Claude Code shows the model: only the notice may reach it, never a
    # library's log line (watchdog logs its own thread trouble there by default).
    logging.getLogger().addHandler(logging.NullHandler())
    me, host = os.getpid(), host_process()
    delivery.arm_waiter(session, me)
    kick = threading.Event()
    watching = store.watch(kick.set, mail_for=name, waiters_of=name)
    try:
        while True:
            kick.clear()
            if delivery.waiter_replaced(session, me) or not alive(host):
                return 0
            mail = delivery.unannounced(session, METHOD)
            if mail is None:
                return 0  # the agent's config does not (or no longer) choose this wake
            if mail:
                stderr.write(wake_notice(name, mail, cli) + "\n")
                stderr.flush()
                delivery.announce(session, mail)
                return REWAKE_EXIT
            kick.wait(CHECK_SECONDS if watching is not None else POLL_SECONDS)
    finally:
        if watching is not None:
            watching.close()
