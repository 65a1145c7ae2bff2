"""Helpers shared by tests: message factories and a picture of a mailbox folder."""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import stat
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from mailslot.core.ids import new_id
from mailslot.core.message import Message
from mailslot.store import Store

BASE = datetime(2026, 9, 21, 12, 0, tzinfo=UTC)


def make_message(sender: str = "claude", to: tuple[str, ...] = ("gemini",),
                 subject: str = "hello", body: str = "hi", n: int = 0) -> Message:
    """A message whose id sorts by ``n``."""
    when = BASE + timedelta(seconds=n)
    return Message(new_id(when, sender, list(to)), when.isoformat(), sender, to,
                   subject, body)


def snapshot(root: Path) -> dict[str, tuple[str, int, str]]:
    """Every path under ``root``: kind, permission bits and (for files) a content hash.

    Two equal snapshots mean nothing was written, created, removed or re-permissioned.
    """
    seen: dict[str, tuple[str, int, str]] = {}
    if not root.exists():
        return seen
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(top) / name
            info = os.lstat(path)
            rel = str(path.relative_to(root))
            if stat.S_ISLNK(info.st_mode):
                seen[rel] = ("link", 0, os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                seen[rel] = ("dir", stat.S_IMODE(info.st_mode), "")
            else:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                seen[rel] = ("file", stat.S_IMODE(info.st_mode), digest)
    return seen


def files_in(folder: Path) -> list[str]:
    """Names in ``folder`` (empty when it does not exist), sorted."""
    return sorted(os.listdir(folder)) if folder.is_dir() else []


def run_cli(*argv: str, stdin: bytes = b"", cwd: Path | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI as a real process (``python -m mailslot``), in the test's environment."""
    proc = subprocess.run(
        [sys.executable, "-m", "mailslot", *argv], input=stdin, capture_output=True,
        cwd=cwd, env=env, timeout=60, check=False,
    )
    return subprocess.CompletedProcess(proc.args, proc.returncode,
                                       proc.stdout.decode(), proc.stderr.decode())


_MEASURED = """\
import sys
from mailslot.frontends.cli.main import main
code = main(sys.argv[1:])
with open("/proc/self/status") as status:
    peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
print(f"maxrss={peak}", file=sys.stderr)
sys.exit(code)
"""
"""The CLI, then its own peak resident memory: ``VmHWM`` of this program's memory, not
``getrusage``'s ``ru_maxrss``, which Linux carries over ``exec`` from the process that
started it (a large pytest process would be counted)."""


def run_measured(*argv: str) -> tuple[int, str, int, float]:
    """The CLI as its own process: exit code, stderr, its peak resident memory in KB
    (this process alone, not the test's) and how long it ran."""
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", _MEASURED, *argv], capture_output=True,
                          text=True, timeout=300, check=False)
    took = time.monotonic() - started
    err, _, rss = proc.stderr.rpartition("maxrss=")
    return proc.returncode, err, int(rss), took


WORKERS = Path(__file__).resolve().parent / "workers.py"


def worker(*argv: object) -> subprocess.Popen[bytes]:
    """Start ``workers.py`` with ``argv`` as a real process."""
    return subprocess.Popen([sys.executable, str(WORKERS), *map(str, argv)],
                            stderr=subprocess.PIPE)


def promised(out: Path) -> list[tuple[str, list[str]]]:
    """The complete ``<id> <recipients>`` lines a sender wrote (a cut last line is not one)."""
    if not out.exists():
        return []
    text = out.read_text()
    lines = text.split("\n")[:-1]  # whatever follows the last newline was cut by a kill
    return [(mid, to.split(",")) for mid, to in (line.split(" ") for line in lines)]


def wait_for(predicate: Callable[[], bool], timeout: float = 60.0, what: str = "") -> None:
    """Poll ``predicate`` until it holds, failing the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        time.sleep(0.005)


def copies(root: Path, agent: str) -> Counter[str]:
    """How many times each id appears across ``agent``'s new/, cur/ and done/."""
    found: Counter[str] = Counter()
    for folder in ("new", "cur", "done"):
        for name in files_in(root / "agents" / agent / folder):
            found[name.removesuffix(".md")] += 1
    return found


def finish(proc: subprocess.Popen[bytes], timeout: float = 120.0) -> int:
    """Wait for a worker, close its pipe, and fail with its stderr if it failed."""
    _, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err.decode(errors="replace")
    return proc.returncode


def fail_os(monkeypatch: pytest.MonkeyPatch, call: str, where: str, code: int,
            *, after: int = 0) -> None:
    """Make ``os.<call>`` fail with ``code`` for any path containing ``where``, after
    ``after`` successful such calls: a full disk or a permission the test (often run as
    root, whom chmod does not stop) cannot otherwise cause."""
    real = getattr(os, call)
    seen = [0]

    def failing(*args: object, **kwargs: object) -> object:
        paths = [os.fsdecode(a) for a in args if isinstance(a, str | bytes | os.PathLike)]
        if any(where in p for p in paths):
            seen[0] += 1
            if seen[0] > after:
                raise OSError(code, os.strerror(code), paths[-1])
        return real(*args, **kwargs)

    monkeypatch.setattr(os, call, failing)


def put_config(store: Store, config: Mapping[str, Any]) -> None:
    """A test's config, replacing the whole of it, through the store's one writer."""

    def replace(raw: dict[str, Any]) -> bool:
        raw.clear()
        raw.update(config)
        return True

    store.update_config(replace)


def unlimited(store: Store) -> None:
    """Switch the loop governor's limits off (every other setting kept), for a test of
    something else that sends hundreds of messages between two agents at once: to the
    governor that is a loop (tests/test_governor.py tests it)."""

    def change(raw: dict[str, Any]) -> bool:
        raw["governor"] = dict.fromkeys(("pair_sends_per_hour", "agent_sends_per_hour",
                                         "pair_wakes_per_hour", "agent_wakes_per_hour"))
        return True

    store.update_config(change)


def fake_program(folder: Path, name: str, version: str | None = None, *,
                 record: Path | None = None) -> Path:
    """An executable ``folder/name`` that prints ``version`` for ``--version`` (nothing,
    and exit 1, when ``version`` is None) and, given ``record``, appends its argv there as
    one JSON line for anything else."""
    path = folder / name
    said = f"print({version!r})" if version is not None else "sys.exit(1)"
    keep = (f"open({str(record)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')"
            if record is not None else "pass")
    path.write_text(f"#!{sys.executable}\nimport json, sys\n"
                    f"if sys.argv[1:] == ['--version']:\n    {said}\nelse:\n    {keep}\n")
    path.chmod(0o755)
    return path


def fake_helper(where: Any) -> socket.socket:
    """A listener of the test's own at a helper's socket (the hook relay's, the hub's:
    a :class:`mailslot.core.local_socket.Place`), private as a helper's is."""
    os.makedirs(where.folder, mode=0o700, exist_ok=True)
    listener = socket.socket(socket.AF_UNIX)
    before = os.umask(0o177)
    listener.bind(where.socket)
    os.umask(before)
    listener.listen(8)
    return listener


def break_privacy(where: Any, how: str) -> None:
    """Make a helper's socket or folder one a client must not trust: ``socket mode``,
    ``folder mode``, ``socket owner`` or ``folder owner`` (the owners need root)."""
    if how == "socket mode":
        os.chmod(where.socket, 0o666)
    elif how == "folder mode":
        os.chmod(where.folder, 0o755)
    elif how == "socket owner":
        os.chown(where.socket, 65534, 65534)
    else:
        os.chown(where.folder, 65534, 65534)


def as_nobody(where: Any, hello: bytes) -> str:
    """What user ``nobody`` reads after sending ``hello`` to a helper's socket opened
    to everyone (as root): ``b''`` when it is closed without a word."""
    os.chmod(os.path.dirname(where.folder), 0o711)
    os.chmod(where.folder, 0o777)  # as if the folder let anyone in
    os.chmod(where.socket, 0o777)
    probe = ("import socket,sys\ns=socket.socket(socket.AF_UNIX);s.connect(sys.argv[1])\n"
             "s.settimeout(10)\ntry:\n s.sendall(sys.argv[2].encode()+b'\\n')\n"
             " print(repr(s.recv(100)))\n"
             "except (BrokenPipeError, ConnectionResetError):  # closed before or after\n"
             " print(repr(b''))")
    python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
    got = subprocess.run(["runuser", "-u", "nobody", "--", python, "-c", probe,
                          where.socket, hello.decode()], capture_output=True, text=True,
                         timeout=60, check=False)
    return got.stdout.strip() or got.stderr.strip()  # what went wrong, if it did


def play_broken(listener: socket.socket, fake: str, held: list[socket.socket]
                ) -> threading.Thread:
    """A thread playing a broken helper on ``listener`` for one connection: it reads the
    request, then ``refuses``, ``says garbage``, ``never answers`` (the connection kept
    in ``held``) or hangs up (anything else)."""

    def play() -> None:
        conn, _ = listener.accept()
        conn.recv(1 << 20)
        if fake == "refuses":
            conn.sendall(b'{"refused": "no"}\n')
        elif fake == "says garbage":
            conn.sendall(b"\x00not json\n")
        elif fake == "never answers":
            held.append(conn)
            return
        conn.close()

    player = threading.Thread(target=play, daemon=True)
    player.start()
    return player


def proc_status(pid: int, field: str) -> int:
    """A number of ``/proc/PID/status`` (``VmRSS``, ``VmHWM``: kibibytes; ``Threads``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for pid {pid}")


def idle_connections(path: str, count: int) -> list[socket.socket]:
    """``count`` connections to a helper's socket that never say a word."""
    opened = []
    for _ in range(count):
        sock = socket.socket(socket.AF_UNIX)
        sock.connect(path)  # blocking: waits while the backlog is full
        sock.settimeout(60)
        opened.append(sock)
    return opened


def closed_by_peer(sock: socket.socket) -> bool:
    """Did the other end close ``sock`` (within its timeout)?"""
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def endless_lines(path: str, count: int, mib: int) -> list[bool]:
    """``count`` connections at once, each sending ``mib`` MiB with no line break;
    whether the helper cut each off (closed it) rather than taking it all."""
    cut = [False] * count

    def flood(n: int) -> None:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(path)  # blocking: waits while the backlog is full
            sock.settimeout(60)
            try:
                for _ in range(mib):
                    sock.sendall(b"x" * (1 << 20))
            except (BrokenPipeError, ConnectionResetError):
                cut[n] = True

    threads = [threading.Thread(target=flood, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return cut
