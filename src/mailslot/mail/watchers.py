"""Whether a watcher runs for this mailbox on this machine, and starting one when not.

One watcher per mailbox and machine holds an exclusive ``flock`` on a lock file for as
long as it runs; the kernel drops the lock when the process ends however it ends
(``kill -9`` included), so liveness is judged by the lock, never by a pid that may have
been reused. Beside the lock, the holder writes a small record (pid, host name,
started-at, how it was started), atomically (a new file renamed over the old), for
``who``, ``doctor`` and the web page to show.

Where (docs/wake.md, "The watcher starts itself"):

* a mailbox folder: ``<mailbox>/watcher/<machine>.lock``, ``.json`` and ``.log`` (and
  ``.failed`` while the last one started on demand stopped at its start, saying why);
* a store that is no folder (PostgreSQL): ``$XDG_STATE_HOME/mailslot/watchers/<hash>``
  (``~/.local/state`` when unset), the hash of the store's location, so one watcher
  runs per machine and database whoever starts it.

This module is on the hook and send path: it imports ``os`` and ``fcntl`` only at load
time, and a probe is an open, a shared non-blocking ``flock`` and a close. A prober holds
the lock shared for those few microseconds; a starting watcher asks for it exclusively
and retries for :data:`TAKE_SECONDS` before deciding that another watcher has it.
Starting one is spawn-and-go (:func:`start`): ``posix_spawn`` in a new session, stdin
from ``/dev/null``, output to the log, nothing waited for.

The folder, the lock and the record are another process's to plant things in: the
folder must be a real folder of this user's (:func:`~mailslot.core.durable.check_folder`,
so a symlinked ``watcher/`` is refused, never followed for the lock, the record or the
log), the lock and the record regular files (a FIFO there is refused, never waited on),
and the record's pid is signalled only while its start time and command line are
those the record names (:func:`impostor`).
"""

from __future__ import annotations

import fcntl
import os
import stat
import sys
import time

from ..core import jsontext
from ..core.detached import spawn
from ..core.durable import check_folder, make_folders, open_file, read_file
from ..core.errors import MailslotError, UnsafePath

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from ..store.base import Store

FOREGROUND, ON_DEMAND, SERVICE = "foreground", "on-demand", "service"
HOW = (FOREGROUND, ON_DEMAND, SERVICE)
DEFAULT_IDLE_SECONDS = 600.0
"""An on-demand watcher exits after this long with nothing queued (``watcher.idle_seconds``)."""
LOG_LIMIT = 1 << 20
"""The log is moved to ``.log.1`` (the one kept before it replaced) past this many bytes."""
OFF_SWITCH = "MAILSLOT_ON_DEMAND_WATCHER"
TAKE_SECONDS = 0.3
_TAKE_TRIES = 30
_FILE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
_REASON_CHARS = 300
_RECORD_LIMIT = 64 * 1024
"""A record is under a hundred bytes; reading stops here whatever the file holds."""

def machine(env: Mapping[str, str] = os.environ) -> str:
    """This machine's name as :func:`mailslot.core.config.this_machine` gives it
    (``MAILSLOT_HOST``, else the host name), without importing the config module."""
    return env.get("MAILSLOT_HOST") or os.uname().nodename


def base_path(store: Store, env: Mapping[str, str] = os.environ) -> str:
    """The lock file's path without its ``.lock`` (the record and log share it)."""
    name = machine(env)
    if not name or not set(name) <= _FILE_CHARS or name.startswith("."):
        name = "h-" + _digest(name)
    if store.folder is not None:
        return os.path.join(store.folder, "watcher", name)
    state = env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local",
                                                      "state")
    return os.path.join(state, "mailslot", "watchers", f"{_digest(store.location)}-{name}")


def _digest(text: str) -> str:
    import hashlib  # a store that is no folder, or an odd host name: rare

    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def relays_named(config: Mapping[str, Any]) -> bool:
    """Does config.json name a remote A2A agent (``a2a.remotes``)?"""
    section = config.get("a2a") if isinstance(config, dict) else None
    return isinstance(section, dict) and bool(section.get("remotes"))


def wanted(config: Mapping[str, Any]) -> bool:
    """Does some agent have a wake (``wake_on_mail`` on, a method that is not
    ``unsupported``) or a notifier, does config.json ask for a bridge (``bridges``) or
    for alerts of aging mail (``alerts``), or is there a peer to carry mail to
    (``peers``, one with ``ssh``) or a remote A2A agent to relay to (``a2a.remotes``)?
    Read from the raw config, so the hook path does not load the config module; a
    malformed entry counts as yes (the watcher says why)."""
    if isinstance(config, dict) and config.get("bridges"):
        return True  # the watcher runs the bridges config.json asks for
    if isinstance(config, dict) and config.get("alerts"):
        return True  # the watcher tells the owner of unread mail past its age limit
    if _carries(config) or relays_named(config):
        return True  # peers to carry mail to, or the A2A relay (a2a.remotes named)
    agents = config.get("agents") if isinstance(config, dict) else None
    if not isinstance(agents, dict):
        return False
    for entry in agents.values():
        if not isinstance(entry, dict):
            continue
        if entry.get("notify"):
            return True
        if entry.get("wake_on_mail") and entry.get("wake_method") != "unsupported":
            return True
    return False


def _carries(config: Mapping[str, Any]) -> bool:
    """Does a peer in config.json have an ``ssh`` destination (the watcher carries mail
    to it and fetches what waits there)? A malformed entry counts as yes."""
    peers = config.get("peers") if isinstance(config, dict) else None
    return isinstance(peers, dict) and any(not isinstance(entry, dict) or entry.get("ssh")
                                           for entry in peers.values())


def on_demand_allowed(config: Mapping[str, Any]) -> bool:
    """``watcher.on_demand`` (default true): may a send, hook or server start one?"""
    section = config.get("watcher") if isinstance(config, dict) else None
    return not (isinstance(section, dict) and section.get("on_demand") is False)


def idle_seconds(config: Mapping[str, Any]) -> float:
    """``watcher.idle_seconds``: how long an on-demand watcher stays with nothing to do
    (a number from 1 to 86,400; anything else is the default)."""
    section = config.get("watcher") if isinstance(config, dict) else None
    value = section.get("idle_seconds") if isinstance(section, dict) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool) \
            and 1 <= value <= 86_400:
        return float(value)
    return DEFAULT_IDLE_SECONDS


def _open_lock(base: str) -> int:
    """The lock file, made (with its folder) the first time: an ``lstat`` of the folder
    and one ``open`` after that. :class:`UnsafePath` for a folder that is a link (or
    another's, or others may write to it) and for a lock that is no regular file."""
    folder = os.path.dirname(base)
    try:
        check_folder(folder)
    except FileNotFoundError:
        make_folders(folder)
        check_folder(folder)
    return open_file(base + ".lock", os.O_RDWR | os.O_CREAT)


def is_running(store: Store, env: Mapping[str, str] = os.environ) -> bool:
    """Does a watcher hold this mailbox's lock on this machine? (open, flock, close)
    :class:`UnsafePath` when the folder or the lock was planted (see :func:`_open_lock`):
    nothing there can be trusted, and no watcher may be started through it."""
    try:
        fd = _open_lock(base_path(store, env))
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing drops our shared lock, if we took it
    return False


def record(store: Store, env: Mapping[str, str] = os.environ) -> dict[str, Any] | None:
    """The running watcher's record (``pid``, ``host``, ``started``, ``how``, ``log``),
    or ``None`` when none runs. A record left by a watcher that died is not shown."""
    if not is_running(store, env):
        return None
    base = base_path(store, env)
    try:
        data = jsontext.loads(read_file(base + ".json", _RECORD_LIMIT))
    except (OSError, ValueError, UnsafePath):  # a planted record: doctor names it
        data = None
    if not isinstance(data, dict):  # it has the lock and has not written yet
        data = {"pid": None, "host": machine(env), "started": None, "how": None}
    data["log"] = base + ".log"
    return data


def impostor(found: Mapping[str, Any]) -> str | None:
    """Why the pid a watcher record names is not (or cannot be shown to be) the watcher
    that wrote it, or ``None`` when it is: its start time and command line are those
    the record holds, and the command line is a ``mailslot watch``. Asked before any
    signal, so a forged or stale record never makes mailslot signal another process."""
    from ..core.processes import command_line, start_ticks  # never on the hook path

    pid = found.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 1:
        return "the record names no pid"
    began, argv = start_ticks(pid), command_line(pid)
    if began is None or argv is None:
        return f"pid {pid} is not running here, or cannot be checked"
    if began != found.get("pid_start"):
        return f"pid {pid} did not start when the record says"
    if _argv_digest(argv) != found.get("argv_digest") or not _is_watch(argv):
        return f"pid {pid} does not run the watcher the record names"
    return None


def _argv_digest(argv: list[str] | None) -> str | None:
    """A digest of a command line, for the record: the line itself may hold a database
    password (``--dir postgresql://…``), which a file must not keep."""
    return None if argv is None else _digest("\0".join(argv))


def _is_watch(argv: list[str]) -> bool:
    """Is ``argv`` a ``mailslot watch`` (``python -m mailslot watch``, the script's)?"""
    words = [os.path.basename(w) for w in argv]
    at = words.index("mailslot") if "mailslot" in words else -1
    return at >= 0 and "watch" in words[at + 1:]


def problems(store: Store, env: Mapping[str, str] = os.environ) -> list[str]:
    """What is wrong with the watcher's folder, lock, record and log on this machine:
    a link, a FIFO, a device or a folder where each should be (one line each, for
    ``doctor``: the file store's own walk already names what is in its folder)."""
    base = base_path(store, env)
    found: list[str] = []
    try:
        check_folder(os.path.dirname(base))
    except FileNotFoundError:
        return []
    except UnsafePath as exc:
        return [f"watcher: {exc}"]
    for path in (base + ".lock", base + ".json", base + ".log"):
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(mode):
            kind = "a symlink" if stat.S_ISLNK(mode) else "not a regular file"
            found.append(f"watcher: {path} is {kind}; mailslot never reads it (remove it)")
    return found


class Holder:
    """The running watcher's hold on the lock: taken by :func:`hold`, kept while it runs,
    released (and the record removed) by :meth:`release`, or by the kernel at death."""

    def __init__(self, fd: int, base: str) -> None:
        self.fd, self.base = fd, base

    def release(self) -> None:
        if self.fd < 0:
            return
        import contextlib  # the watcher's side only: not loaded on the hook path

        with contextlib.suppress(OSError):
            os.unlink(self.base + ".json")
        os.close(self.fd)
        self.fd = -1


def hold(store: Store, how: str, env: Mapping[str, str] = os.environ) -> Holder | None:
    """Take the lock for a watcher started ``how`` and write its record; ``None`` when
    another watcher has it. Probers hold it shared for a moment only, so a watcher
    tries for :data:`TAKE_SECONDS` before giving up."""
    base = base_path(store, env)
    fd = _open_lock(base)
    for _ in range(_TAKE_TRIES):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            time.sleep(TAKE_SECONDS / _TAKE_TRIES)
    else:
        os.close(fd)
        return None
    from ..core.processes import command_line, start_ticks  # the watcher's side only

    pid = os.getpid()
    _write_record(base, {"pid": pid, "host": machine(env), "how": how,
                         "started": _now_iso(), "pid_start": start_ticks(pid),
                         "argv_digest": _argv_digest(command_line(pid))})
    return Holder(fd, base)


def _now_iso() -> str:
    from ..core.dates import datetime

    return datetime.now().astimezone().isoformat(timespec="seconds")


def _write_record(base: str, data: dict[str, Any]) -> None:
    _write(base + ".json", jsontext.dumps(data).encode("utf-8"))


def _write(path: str, data: bytes) -> None:
    """Written whole, then renamed over the old one: a reader sees one or the other."""
    staged = f"{path}.{os.getpid()}.tmp"
    fd = open_file(staged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(staged, path)


KEPT = ("MAILSLOT_HOST", "MAILSLOT_RELAY")
"""The only ``MAILSLOT_*`` variables a watcher takes from its starter: which machine
this is and whether the hub relay may run, never who anyone is or where mail is."""


def start(store: Store, env: Mapping[str, str] = os.environ) -> str | None:
    """Start an on-demand watcher for ``store``, detached, without waiting for it;
    returns why it could not be started, or what the last one said (one line), else
    ``None``.

    The child is ``python -m mailslot [--dir FOLDER] watch --started on-demand``: a
    folder is named in its argv, which outranks any ``MAILSLOT_STORE`` or
    ``MAILSLOT_DIR`` of the starter's; a database's whole address (its password too)
    goes in ``MAILSLOT_STORE`` in its environment only, never in argv (``ps`` shows
    argv to everyone, a process's environment only to its user). Of the starter's
    ``MAILSLOT_*`` variables it keeps only :data:`KEPT`: no identity, credential,
    secret or passphrase. It runs in a session of its own, stdin from ``/dev/null``
    and its output appended to the log, no other descriptor inherited, no signal
    blocked and SIGINT and SIGTERM at their defaults (a host may run its hooks with
    them ignored). None is started from a sandbox (:mod:`mailslot.core.sandbox`).
    If two processes start one at once, the second watcher finds the lock taken and
    exits at once.
    """
    from ..backends import handed_over
    from ..core.sandbox import sandboxed  # only when one is to be started

    boxed = sandboxed()
    if boxed is not None:
        return (f"this process runs in a sandbox ({boxed}): no watcher is started from "
                "it, and the wake stays queued for one started outside it (the next "
                "ordinary send, a hook or `mailslot watch`)")
    base = base_path(store, env)
    named, told_env = handed_over(store)
    child_env = {k: v for k, v in env.items() if not k.startswith("MAILSLOT_") or k in KEPT}
    child_env.update(told_env)
    told = last_failure(base)
    why = spawn([sys.executable, "-m", "mailslot", *named, "watch", "--started", ON_DEMAND],
                child_env, base + ".log")
    if why is not None:
        return f"a watcher could not be started ({why})"
    if told is not None:
        return (f"the last watcher started here stopped: {told} (its log: {base}.log); "
                "another was started")
    return None


def failed(base: str, reason: str | None) -> None:
    """Keep (or, ``None``, remove) why the on-demand watcher at ``base`` stopped at its
    start: nobody reads its output, so the next starter tells its sender
    (:func:`start`). Best effort, written whole."""
    import contextlib  # the watcher's side only

    if reason is None:
        with contextlib.suppress(OSError):
            os.unlink(base + ".failed")
        return
    with contextlib.suppress(OSError):
        _write(base + ".failed", " ".join(reason.split())[:_REASON_CHARS].encode("utf-8"))


def last_failure(base: str) -> str | None:
    """What :func:`failed` kept: read without following a link or blocking, from a
    regular file of this user's only, at most :data:`_REASON_CHARS` characters."""
    try:
        fd = open_file(base + ".failed", os.O_RDONLY)
    except (OSError, UnsafePath):
        return None
    try:
        if os.fstat(fd).st_uid != os.geteuid():
            return None
        text = os.read(fd, _REASON_CHARS * 4).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)
    shown = "".join(c if c.isprintable() else " " for c in " ".join(text.split()))
    return shown[:_REASON_CHARS] or None


def ensure(store: Store, config: Mapping[str, Any] | None = None,
           env: Mapping[str, str] = os.environ, *, queued_only: bool = False) -> str | None:
    """Make sure a watcher runs if one is wanted: the one decision a send, hook or
    server makes.

    A send (it has just queued) starts one whenever one is wanted; a hook or a server
    (``queued_only``) only when there is work for it: a wake or notice queued or claimed
    (a watcher killed mid-wake leaves its claim), or a bridge config.json asks for. So
    a watcher killed with ``kill -9`` is started again by the next hook or server call,
    not only by the next send, and one that left because it was idle is not started
    again for nothing. The cost while one runs: an ``lstat``, an open and a ``flock``.

    Returns ``None`` when none is wanted, one runs, or one was just started; else why
    wakes cannot happen now, or why the last one started here stopped at once (one
    line, for the sender). Never raises.
    ``MAILSLOT_ON_DEMAND_WATCHER=0`` in the environment: this process starts none and
    says nothing (a person or a test suite that runs its own watcher).
    """
    if env.get(OFF_SWITCH) == "0":
        return None
    try:
        if config is None:
            config = store.load_config()
        if not wanted(config) or is_running(store, env):
            return None
        if queued_only and not _work_waits(store, config):
            return None
        if not on_demand_allowed(config):
            return ("no watcher is running and watcher.on_demand is false: wakes wait "
                    "until `mailslot watch` runs")
        return start(store, env)
    except MailslotError as exc:  # a planted watcher folder or lock: nothing started
        return f"a watcher could not be started ({exc})"
    except Exception as exc:  # a send or hook must never fail over this
        return f"cannot tell whether a watcher runs ({type(exc).__name__}: {exc})"


def _work_waits(store: Store, config: Mapping[str, Any]) -> bool:
    """Is there work for a watcher now: a bridge or the A2A relay to run, peers to
    carry mail to and from, or a wake or notice queued?"""
    if isinstance(config, dict) and (config.get("bridges") or _carries(config)
                                     or relays_named(config)):
        return True
    return any(store.queued_agents().values())


class Keeper:
    """A long-running server's look at the watcher (``serve``, ``serve --http``): on each
    call, at most once every :data:`KEEP_SECONDS`, :func:`ensure` with ``queued_only``,
    so a watcher killed while wakes wait is started again by the next tool call."""

    KEEP_SECONDS = 2.0

    def __init__(self, store: Store, env: Mapping[str, str] = os.environ) -> None:
        self.store, self.env = store, env
        self._next = 0.0

    def __call__(self) -> str | None:
        now = time.monotonic()
        if now < self._next:
            return None
        self._next = now + self.KEEP_SECONDS
        return ensure(self.store, env=self.env, queued_only=True)


def rotate_log(base: str, limit: int = LOG_LIMIT) -> None:
    """Keep the log bounded: past ``limit`` bytes it becomes ``.log.1`` and standard
    output and error continue in a new file (called by the on-demand watcher)."""
    path = base + ".log"
    try:
        if os.fstat(1).st_size <= limit:
            return
        os.replace(path, path + ".1")
        fd = open_file(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    except (OSError, UnsafePath):
        return
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
