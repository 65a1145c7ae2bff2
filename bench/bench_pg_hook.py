"""What a session hook pays for PostgreSQL, next to the file store in the same run: the
driver's import, a connection with its first round trip, the whole hook process through
this machine's relay and directly (``MAILSLOT_RELAY=0``), and the hook against a
database that never answers (it must end within the hook's bound, printing nothing).

Whole processes are interleaved with their baselines (``python -c pass``, the file
store's hook), so a burst of load on this shared machine hits both alike.
"""

from __future__ import annotations

import compileall
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from bench_hooks import FIXTURES
from bench_store import BODY, _scratch
from common import ROOT, VENV_BIN, NotDone, Row, ms, timed_run
from mailslot import Mailbox
from mailslot.access.identity import Identity
from mailslot.backends import open_store
from mailslot.frontends.hooks import relay_client
from mailslot.frontends.hooks.hook_entry import BOUND_SECONDS

sys.path.insert(0, str(ROOT / "tests"))
from pgcluster import Cluster, cluster

FIXTURE = FIXTURES / "claude-session-start.json"

REPEATS = 15


SHOWN = ["additionalContext", "--agent gemini"]
"""What the session-start hook prints when it did its work: gemini's mail (the fixture's
session, shown it at the first run, is reminded of it at the next)."""


def _interleaved(commands: dict[str, tuple[Sequence[str], dict[str, str], Sequence[str]]],
                 repeats: int = REPEATS) -> dict[str, float]:
    """Median wall time of each whole process, the commands taking turns; each run
    checked to have done its work (exit 0, showing what it must, nothing on stderr:
    a hook that failed says so there and exits 0)."""
    stdin = FIXTURE.read_bytes()
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeats):
        for name, (argv, env, shows) in commands.items():
            times[name].append(timed_run(argv, shows, quiet=True, input=stdin, env=env))
    return {name: statistics.median(samples) for name, samples in times.items()}


def _median(fn: Callable[[], object], repeats: int = 30) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _import_row() -> Row:
    env = dict(os.environ)
    found = _interleaved({
        "bare": ([sys.executable, "-c", "pass"], env, ()),
        "files": ([sys.executable, "-c", "import mailslot.backends.files.file_store"], env, ()),
        "driver": ([sys.executable, "-c", "import psycopg"], env, ()),
        "pg": ([sys.executable, "-c", "import mailslot.backends.postgres.pg_store"], env, ())})
    return Row(f"import psycopg / the PostgreSQL store module (process, median of {REPEATS})",
               f"{ms(found['driver'] - found['bare'])} / {ms(found['pg'] - found['bare'])}"
               " over python -c pass",
               f"file store module {ms(found['files'] - found['bare'])}; "
               f"python -c pass {ms(found['bare'])}", "(informational)", None)


def _connect_row(url: str, folder: Path) -> Row:
    import psycopg

    def connect() -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            if conn.execute("SELECT 1").fetchone() != (1,):
                raise NotDone("SELECT 1 answered otherwise")

    def open_files() -> None:
        if not open_store(str(folder)).exists():
            raise NotDone(f"no mailbox at {folder}")

    return Row("connect + first round trip (loopback TCP, median of 30)",
               ms(_median(connect)), f"file store open + exists {ms(_median(open_files))}",
               "(informational)", None)


@contextmanager
def relay_for(url: str, env: dict[str, str]) -> Iterator[dict[str, str]]:
    """A relay for ``url`` started as a hook would start it, in a private runtime
    folder; yields the environment whose hooks it answers, and stops it after."""
    runtime = tempfile.mkdtemp(prefix="ms-")
    os.chmod(runtime, 0o700)
    hooks = {**env, "MAILSLOT_STORE": url, "XDG_RUNTIME_DIR": runtime}
    hooks.pop("MAILSLOT_RELAY", None)
    relay = relay_client.wanted(url, hooks)
    assert relay is not None
    proc = subprocess.Popen([sys.executable, "-m", "mailslot.frontends.hooks.relay"],
                            env={**hooks, "MAILSLOT_RELAY_STORE": url})
    try:
        while not os.path.exists(relay.socket):
            if proc.poll() is not None:
                raise RuntimeError("the relay ended at start")
            time.sleep(0.05)
        yield hooks
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(runtime, ignore_errors=True)


def _hook_rows(url: str, folder: Path) -> list[Row]:
    hook = [str(VENV_BIN / "mailslot"), "hook", "claude", "session-start", "--agent", "gemini"]
    base = {**os.environ, "HOME": str(folder)}
    base.pop("MAILSLOT_DIR", None)
    with relay_for(url, base) as relayed:
        found = _interleaved({
            "bare": ([sys.executable, "-c", "pass"], base, ()),
            "files": (hook, {**base, "MAILSLOT_STORE": str(folder / "files")}, SHOWN),
            "direct": (hook, {**base, "MAILSLOT_STORE": url, "MAILSLOT_RELAY": "0"}, SHOWN),
            "relay": (hook, relayed, SHOWN)})
    bare = found["bare"]
    ratio = found["relay"] / bare
    return [Row(f"session-start hook process on PostgreSQL, through the relay (median of "
                f"{REPEATS})", f"{ms(found['relay'])} ({ratio:.1f}x pass)",
                f"direct {ms(found['direct'])} ({found['direct'] / bare:.1f}x); file store "
                f"{ms(found['files'])} ({found['files'] / bare:.1f}x); pass {ms(bare)}",
                "<= 3.0x pass", ratio <= 3.0)]


def _unreachable_row(folder: Path) -> Row:
    """A server that takes the connection and never speaks: the hook's bound ends it."""
    hook = [str(VENV_BIN / "mailslot"), "hook", "claude", "session-start", "--agent", "gemini"]
    samples, printed = [], b""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        env = {**os.environ, "HOME": str(folder),
               "MAILSLOT_STORE": f"postgresql://gemini@127.0.0.1:{silent.getsockname()[1]}/m"}
        for _ in range(3):
            start = time.perf_counter()
            done = subprocess.run(hook, input=FIXTURE.read_bytes(), capture_output=True,
                                  env=env, check=True)
            samples.append(time.perf_counter() - start)
            printed += done.stdout
    worst = max(samples)
    return Row("hook, database never answers (worst of 3)",
               f"{ms(worst)}, {'silent' if not printed else 'PRINTED'}",
               f"the hook's bound {BOUND_SECONDS:.0f} s", f"<= {BOUND_SECONDS + 0.5:.1f} s, silent",
               worst <= BOUND_SECONDS + 0.5 and not printed)


def _setup(pg: Cluster, folder: Path) -> str:
    url = pg.new_database()
    for location in (url, str(folder / "files")):
        Mailbox(open_store(location), Identity("claude", "--agent")).send("gemini", "s", BODY)
    return url


def run() -> list[Row]:
    compileall.compile_dir(str(ROOT / "src" / "mailslot"), quiet=1)  # as pip install does
    with cluster(durable=True) as pg, _scratch() as folder:
        url = _setup(pg, folder)
        return [_import_row(), _connect_row(url, folder / "files"),
                *_hook_rows(url, folder), _unreachable_row(folder)]


if __name__ == "__main__":
    from common import print_table

    print_table(run())
