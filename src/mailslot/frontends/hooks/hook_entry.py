"""The ``mailslot hook`` entry: read the host's JSON, print the host's JSON, exit 0.

A hook never fails a session. Whatever goes wrong (no identity, no mailbox, garbage on
stdin, an unreadable file, a slow disk) it prints nothing, or only what it could build,
says so in one line on stderr, and exits 0; a timer ends the process (still exit 0)
after :data:`BOUND_SECONDS` however it is stuck. What was shown is recorded only after
the output was written and flushed.
"""

from __future__ import annotations

import os
import sys
import time

from ...access.identity import derive_identity
from ...backends import open_store, store_location
from ...core import jsontext
from ...core.errors import MailslotError
from ...core.names import check_name
from . import host_io, relay_client
from .host_process import host_process
from .reading import read_input

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from collections.abc import Callable, Mapping
    from typing import TextIO

    from ...access.identity import Identity
    from ...host_registry import Host
    from ...store.base import Store
else:  # the C module: ``signal`` builds three enums at import, a millisecond per hook
    import _signal as signal

BOUND_SECONDS = 3.0


def run_hook(
    host: str,
    event: str,
    *,
    agent: str | None = None,
    root: str | None = None,
    env: Mapping[str, str] = os.environ,
    remote: str | None = None,
    credential: str | None = None,
) -> int:
    """Run one hook on this process's stdin and stdout; always returns 0.

    A host's background waiter is the exception: it blocks for as long as the session is
    idle and exits with the host's wake status to wake it (see :mod:`.wait`).
    """
    found = host_io.known(host)  # the one lookup: the host goes down as itself
    if found is not None and event == found.wake_hook:
        from .wait import run_wait

        return run_wait(found, agent=agent, root=root, env=env)
    restore = _bound(BOUND_SECONDS)
    problem: str | None
    try:
        if remote is not None:  # the store is behind `serve --http`
            problem = _run_remote(host, found, event, remote, credential, env)
        else:
            problem = _run(host, found, event, agent, root, env, sys.stdin, sys.stdout)
    except MailslotError as exc:
        problem = str(exc)
    except BaseException as exc:  # a hook never fails a session, whatever happened
        problem = f"{type(exc).__name__}: {exc}"
    finally:
        restore()
    if problem:
        _say(problem)
    return 0


def _say(problem: str) -> None:
    """One line on stderr, if stderr can take it."""
    line = f"mailslot hook: {problem}".splitlines()[0][:300]
    try:
        print(line, file=sys.stderr)
    except (OSError, ValueError):
        return


def _run(host: str, found: Host | None, event: str, agent: str | None, root: str | None,
         env: Mapping[str, str], stdin: TextIO | None, stdout: TextIO) -> str | None:
    """The hook; returns a problem worth one stderr line, if any. On a PostgreSQL
    store it is answered by this machine's relay when one runs and accepts
    (:mod:`.relay_client`), else here."""
    payload = host_io.parse_payload(read_input(stdin))
    call = host_io.request(found, event, payload, env)
    if call is None:
        return f"unknown hook {host!r} {event!r} (see docs/hooks.md)"
    identity = derive_identity(agent, env)
    if identity is None:
        return "no identity (pass --agent, set MAILSLOT_AGENT or run in a git checkout)"
    location = store_location(root, env)
    relayed = relay_client.wanted(location, env)
    if relayed:
        asked = relay_client.ask(relayed, {
            "host": host, "event": event, "payload": payload, "env": dict(env),
            "identity": [identity.name, identity.source, identity.path],
            "facts": _facts(call.caller)}, stdout)
        if asked != relay_client.UNANSWERED:
            return asked
    problem = answer(open_store(location, env), call, identity, env, stdout,
                     lambda: host_io.reads(stdout), lambda: _facts(call.caller))
    if relayed:
        relay_client.start(relayed, location, env)
    return problem


def answer(store: Store, call: host_io.Request, identity: Identity, env: Mapping[str, str],
           stdout: TextIO, taken: Callable[[], bool],
           facts: Callable[[], dict[str, object]]) -> str | None:
    """The hook over an open ``store``, the same here and in the relay: print the host's
    JSON on ``stdout`` and flush it, then record what ``taken()`` says the host took.
    The delivery rules are imported here: a hook the relay answers never loads them."""
    from ...mail.invocation import invocation
    from ...service.delivery import START, Delivery

    name = check_name(identity.name, f"agent name (from {identity.source})")
    if not store.exists():
        return None  # no mailbox yet: nothing to say
    caller = host_io.known(call.caller)  # which tool answers mail, if in doubt
    note = "" if caller is None else caller.answer_note(
        call.tools, caller.bridged(str(store.location), env))
    delivery = Delivery(store, name, identity, invocation(name, store.location, env),
                        call.tools, note)
    planned = None
    if call.moment is not None:
        delivery.look(call.host, call.record, call.session)
        planned = delivery.plan(call.moment, call.session, limit=host_io.CONTEXT_LIMIT,
                                stop_active=call.stop_active)
    stdout.write(jsontext.dumps(host_io.output(call, planned.text if planned else None)))
    stdout.flush()
    if planned is not None:
        delivery.commit(planned, host=call.caller, taken=taken())
    if call.session:
        delivery.ran(call.session, facts, fresh=call.moment == START)
    if call.moment == START and call.session:
        delivery.started(call.caller, call.session)
    _see_watcher_runs(store, env)
    return delivery.problems[0] if delivery.problems else None


def _see_watcher_runs(store: Store, env: Mapping[str, str]) -> None:
    """Start a watcher if work waits for one (a wake or notice queued, a bridge asked
    for) and none runs here: after the output was written, at every hook, so one killed
    while wakes wait comes back at the session's next step. A probe of a few system
    calls while one runs, and spawn-and-go. Nothing of the wake package is loaded
    (docs/wake.md, "The watcher starts itself")."""
    from ...mail.watchers import ensure

    ensure(store, env=env, queued_only=True)  # a problem is the sender's to hear


def _facts(host: str) -> dict[str, object]:
    """What a hook session's record says (read by ``sessions``, ``who`` and the MCP
    server the same host process started; see :mod:`mailslot.access.instances`)."""
    pid, begun = host_process()
    try:
        cwd: str | None = os.getcwd()
    except OSError:  # the folder was removed under the session
        cwd = None
    # config.hostname()'s value, worked out here: importing config (or presence) costs
    # every hook process more than these two lines (tests/test_hooks_safety.py).
    machine = os.uname().nodename if hasattr(os, "uname") else None
    return {"host": host, "pid": pid, "pid_start": begun, "hostname": machine,
            "cwd": cwd, "started": time.time()}


def _run_remote(host: str, found: Host | None, event: str, url: str, credential: str | None,
                env: Mapping[str, str]) -> str | None:
    call = host_io.request(found, event, host_io.parse_payload(read_input(sys.stdin)), env)
    if call is None:
        return f"unknown hook {host!r} {event!r} (see docs/hooks.md)"
    from .remote_hook import run_remote

    run_remote(call, url, credential, sys.stdout)
    return None


def _bound(seconds: float) -> Callable[[], None]:
    """End the process with exit 0 after ``seconds``; returns the undo.

    A signal timer rather than a thread: it interrupts a blocked read or open, and costs
    no thread start. Off the main thread (an embedding program) there is no bound.
    """
    try:
        previous = signal.signal(signal.SIGALRM, _expire)
    except ValueError:
        return lambda: None
    earlier, interval = signal.setitimer(signal.ITIMER_REAL, seconds)

    def restore() -> None:
        left = signal.setitimer(signal.ITIMER_REAL, 0)[0]
        signal.signal(signal.SIGALRM, previous)
        if earlier:  # someone else's timer was running: give it back what is left
            signal.setitimer(signal.ITIMER_REAL, max(earlier - (seconds - left), 0.001),
                             interval)

    return restore


def _expire(signum: int, frame: object) -> None:
    os._exit(0)
