"""Send -> woken, for each wake method, with a real ``mailslot watch`` (events).

One throwaway mailbox, one agent per method, each configured in config.json as
docs/wake.md describes. Every method that starts a program (the ``command`` method and
each host's resume method, ACP included) gets a fake program of the host's name, set as
the agent's program: a ``python -SE`` script that writes ``time.time()`` and its argv and
exits 0. The latency is that time minus the time just before ``send`` (same clock), so it
includes the fake's own interpreter start-up (``python -c pass`` is shown beside it) but
no host's start-up, model or network. The ACP method's fake answers nothing, so its wake
then fails (one attempt, no retry): only its start is timed.

The ``tmux`` method types into a pane of a tmux server on a private socket, the pane
running ``cat > FILE``; the latency is send -> the notice written to FILE, so it holds
the method's checks, its idle wait (the default 1 s of a still screen) and the ~100 ms
before Enter. Sends go one at a time, each waiting for its wake. The watcher started on
demand and its cold start are bench_wake's rows; the background waiter is bench_rewake's.
"""

from __future__ import annotations

import ast
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from common import VENV_BIN, Row, ms, percentile, process_time, unlimited
from mailslot import Mailbox
from mailslot.access.identity import Identity
from mailslot.backends import open_store
from mailslot.core.errors import StoreError
from mailslot.wake.methods import ArgvMethod, CommandMethod
from mailslot.wake.methods_by_name import every_method

SENDS = int(os.environ.get("BENCH_WAKE_METHODS_COUNT", "15"))
TMUX_SENDS = int(os.environ.get("BENCH_WAKE_TMUX_COUNT", "10"))
_FAKE = (
    "#!{python} -SE\n"
    "import sys, time\n"
    "t = time.time()\n"
    "with open({record!r}, 'a') as f:\n"
    "    f.write(repr([t, sys.argv]) + '\\n')\n"
)


def _wait_for(predicate: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"bench_wake_methods: timed out waiting for {what}")
        time.sleep(0.002)


def _fields(tmp: Path) -> dict[str, str]:
    """A value for each field a program-starting method may require, by its name."""
    credentials = tmp / "credentials.json"  # written by a live process: this one
    credentials.write_text(json.dumps({"address": "http://127.0.0.1:9", "token": "bench",
                                       "pid": os.getpid()}))
    return {"session_id": "bench-session-1", "conversation_id": "bench-conversation-1",
            "credentials_file": str(credentials), "cwd": str(tmp)}


def _agents(tmp: Path, record: Path) -> dict[str, dict[str, Any]]:
    """Config for one agent per program-starting method, its fake named like its program."""
    values, bin_dir = _fields(tmp), tmp / "bin"
    bin_dir.mkdir()
    agents: dict[str, dict[str, Any]] = {}
    for name, method in sorted(every_method().items()):
        if not issubclass(method, ArgvMethod):
            continue
        entry = {f.name: values[f.name] for f in method.fields if f.name in values}
        if method is CommandMethod:
            program = "wake-command"
        else:
            try:  # its default program, as it would look it up on PATH
                program = method.from_config(name, entry).executable
            except StoreError as exc:
                raise RuntimeError(f"bench_wake_methods: cannot configure {name}: {exc}") from exc
        fake = bin_dir / program
        if not fake.exists():
            fake.write_text(_FAKE.format(python=sys.executable, record=str(record)))
            fake.chmod(0o755)
        if method is CommandMethod:
            entry["command"] = [str(fake)]
        else:
            entry["executable"] = str(fake)
        agents[name] = {"wake_on_mail": True, "wake_method": name, **entry}
    return agents


@contextmanager
def _tmux_pane(tmp: Path) -> Iterator[tuple[dict[str, Any], Path] | None]:
    """A tmux server on a private socket with one pane running ``cat > FILE``: the
    agent's config and FILE; ``None`` if tmux is missing."""
    if shutil.which("tmux") is None:
        yield None
        return
    socket, typed = tmp / "tmux.sock", tmp / "typed.txt"
    tmux = ["tmux", "-S", str(socket), "-f", os.devnull]
    typed.touch()
    subprocess.run([*tmux, "new-session", "-d", "-x", "200", "-y", "50",
                    f"exec cat > {shlex.quote(str(typed))}"], check=True)
    try:
        pane = subprocess.run([*tmux, "display-message", "-p", "#{pane_id}"], check=True,
                              capture_output=True, text=True).stdout.strip()
        yield {"wake_on_mail": True, "wake_method": "tmux", "tmux_target": pane,
               "tmux_program": "cat", "tmux_socket_path": str(socket)}, typed
    finally:
        subprocess.run([*tmux, "kill-server"], check=False, capture_output=True)


@contextmanager
def _watcher(where: str, tmp: Path) -> Iterator[None]:
    """``mailslot watch`` in its own process with its own HOME; none on demand beside it."""
    from mailslot.mail import watchers

    log, home = tmp / "watch.log", tmp / "home"
    home.mkdir()
    os.environ[watchers.OFF_SWITCH] = "0"
    with log.open("w") as out:
        watcher = subprocess.Popen([str(VENV_BIN / "mailslot"), "--store", where, "watch"],
                                   stdout=out, stderr=subprocess.STDOUT,
                                   env={**os.environ, "HOME": str(home)})
    try:
        _wait_for(lambda: "watching" in log.read_text(), 10, "the watcher to start")
        yield
    finally:
        watcher.send_signal(signal.SIGTERM)
        watcher.wait(10)
        os.environ.pop(watchers.OFF_SWITCH, None)


def measure() -> tuple[dict[str, list[float]], list[float] | None]:
    """Latencies (seconds) per program-starting method, and the tmux method's (``None``
    when tmux is missing)."""
    with tempfile.TemporaryDirectory() as name, _tmux_pane(Path(name)) as pane:
        tmp = Path(name)
        record, where = tmp / "started.txt", str(tmp / "box")
        agents = _agents(tmp, record)
        if pane is not None:
            agents["tmux"] = pane[0]
        store = open_store(where)
        unlimited(where)
        store.update_config(lambda raw: raw.update(
            agents=agents, wake_retry={"attempts": 1}) or True)
        box = Mailbox(store, Identity("bench", "--agent"))

        def started() -> list[list[Any]]:
            return [ast.literal_eval(line) for line in record.read_text().splitlines()] \
                if record.exists() else []

        programs = [a for a in agents if a != "tmux"]
        fakes = {a: Path(agents[a].get("executable") or agents[a]["command"][0]).name
                 for a in programs}
        latencies: dict[str, list[float]] = {a: [] for a in programs}
        with _watcher(where, tmp):
            for n in range(SENDS):
                for agent in programs:
                    before, count = time.time(), len(started())
                    box.send(agent, f"bench {n}", "x")
                    _wait_for(lambda c=count: len(started()) > c, 30, f"{agent}'s program")
                    at, argv = started()[-1]
                    if Path(argv[0]).name != fakes[agent]:
                        raise RuntimeError(f"bench_wake_methods: {agent} started {argv[0]}")
                    latencies[agent].append(at - before)
            typed = None if pane is None else _tmux_sends(box, pane[1])
        return latencies, typed


def _tmux_sends(box: Mailbox, typed: Path) -> list[float]:
    """Send -> the notice written by ``cat`` (the file's modification time)."""
    found: list[float] = []
    for n in range(TMUX_SENDS):
        before, lines = time.time(), typed.read_text().count("\n")
        box.send("tmux", f"bench {n}", "x")
        _wait_for(lambda k=lines: typed.read_text().count("\n") > k, 30, "the tmux pane")
        found.append(typed.stat().st_mtime - before)
    return found


def _row(what: str, samples: list[float], baseline: str) -> Row:
    return Row(what, f"p50 {ms(percentile(samples, 50))}, p99 {ms(percentile(samples, 99))}",
               baseline, "informational", None)


def run() -> list[Row]:
    python = process_time([sys.executable, "-SE", "-c", "pass"])
    latencies, typed = measure()
    command = latencies["command"]
    baseline = (f"python -SE -c pass {ms(python)}; command p50 {ms(percentile(command, 50))}")
    rows = [_row(f"send -> {name} program started (fake), {len(samples)} msgs", samples,
                 baseline if name != "command" else f"python -SE -c pass {ms(python)}")
            for name, samples in latencies.items()]
    if typed is None:
        rows.append(Row("send -> tmux notice typed into a pane", "skipped: tmux not on PATH",
                        "", "informational", None))
    else:
        rows.append(_row(f"send -> tmux notice in the pane's program (cat), default 1 s "
                         f"idle wait, {len(typed)} msgs", typed, baseline))
    return rows


if __name__ == "__main__":
    print(json.dumps([row.__dict__ for row in run()], indent=2))
