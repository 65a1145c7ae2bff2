"""send -> wake command started, with ``mailslot watch`` running in its own process, and
with the watcher started on demand by the first send (docs/wake.md).

Agents opted in with the ``command`` method run a tiny recorder that writes the time it
started; the latency is that time minus the time just before ``send`` was called (same
clock, same machine). It includes the recorder's own interpreter start-up (``python
-S``), so it over-states mailslot's share. Peers poll every 5-60 s, so their latency is
up to the polling interval (half of it on average); that is the baseline column.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import VENV_BIN, NotDone, Row, ms, percentile, process_time, unlimited
from mailslot import Mailbox
from mailslot.access.identity import Identity
from mailslot.backends import open_store

TARGET_P99 = 0.250
PEERS = "peers poll every 5-60 s (mean wait 2.5-30 s)"
_RECORDER = (
    "import sys, time\n"
    "t = time.time()\n"
    "with open(sys.argv[2], 'a') as f:\n"
    "    f.write(sys.argv[1] + ' ' + repr(t) + '\\n')\n"
)


def _wait_for(predicate: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError("bench_wake: timed out waiting for the watcher")
        time.sleep(0.01)


def _wake(command: list[str]) -> dict[str, Any]:
    return {"wake_on_mail": True, "wake_method": "command", "command": command}


def _notifier(command: list[str]) -> dict[str, Any]:
    """A ``command`` notifier, no wake (arrival -> notifier started)."""
    return {"notify": [{"kind": "command", "command": command}]}


def measure(count: int, *, agents: int = 4, gap: float = 0.025,
            poll: float | None = None,
            entry: Callable[[list[str]], dict[str, Any]] = _wake,
            location: str | None = None) -> list[float]:
    """Latencies (seconds) of ``count`` sends spread over ``agents`` agents whose config
    is ``entry(command)``, on a fresh folder or the (fresh) store at ``location``; the
    watcher runs with its own HOME, as on another machine, and none is started on demand
    beside it (it has its own state folder, so a store with no folder would not see it)."""
    from mailslot.mail import watchers

    os.environ[watchers.OFF_SWITCH] = "0"
    try:
        return _measure(count, agents, gap, poll, entry, location)
    finally:
        os.environ.pop(watchers.OFF_SWITCH, None)


def _measure(count: int, agents: int, gap: float, poll: float | None,
             entry: Callable[[list[str]], dict[str, Any]], location: str | None
             ) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        root, starts, script = Path(tmp, "box"), Path(tmp, "starts.txt"), Path(tmp, "rec.py")
        script.write_text(_RECORDER)
        command = [sys.executable, "-S", "-E", str(script), "{id}", str(starts)]
        where = location or str(root)
        store = open_store(where)
        unlimited(where)
        agents_config = {f"agent{i}": entry(command) for i in range(agents)}
        store.update_config(lambda raw: raw.update(agents=agents_config) or True)
        log = Path(tmp, "watch.log")
        argv = [str(VENV_BIN / "mailslot"), "--store", where, "watch"]
        if poll is not None:
            argv += ["--poll", str(poll)]
        Path(tmp, "home").mkdir()
        with log.open("w") as out:
            watcher = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                       env={**os.environ, "HOME": str(Path(tmp, "home"))})
        try:
            _wait_for(lambda: "watching" in log.read_text(), 10)
            box = Mailbox(store, Identity("bench", "--agent"))
            sent: dict[str, float] = {}
            for n in range(count):
                before = time.time()
                sent[box.send(f"agent{n % agents}", f"bench {n}", "x").id] = before
                time.sleep(gap)

            def lines() -> list[str]:
                return starts.read_text().splitlines() if starts.exists() else []

            _wait_for(lambda: len(lines()) >= count, 60)
        finally:
            watcher.send_signal(signal.SIGTERM)
            watcher.wait(10)
        return _latencies(sent, lines())


def measure_on_demand(count: int, colds: int, *, agents: int = 4, gap: float = 0.025
                      ) -> tuple[list[float], list[float]]:
    """No watcher started by hand: each of ``colds`` cold starts is a send finding none
    (it spawns one and goes; the latency holds the watcher's whole start-up), the watcher
    then stopped; then ``count`` sends to the watcher the last one left running."""
    from mailslot.mail import watchers

    with tempfile.TemporaryDirectory() as tmp:
        root, starts, script = Path(tmp, "box"), Path(tmp, "starts.txt"), Path(tmp, "rec.py")
        script.write_text(_RECORDER)
        command = [sys.executable, "-S", "-E", str(script), "{id}", str(starts)]
        store = open_store(str(root))
        unlimited(root)  # 240 sends from one agent: past the loop governor's limits
        agents_config = {f"agent{i}": _wake(command) for i in range(agents)}
        store.update_config(lambda raw: raw.update(agents=agents_config) or True)
        box = Mailbox(store, Identity("bench", "--agent"))
        os.environ.pop(watchers.OFF_SWITCH, None)

        def lines() -> list[str]:
            return starts.read_text().splitlines() if starts.exists() else []

        def stop_watcher() -> None:
            running = watchers.record(store)
            if running and isinstance(running.get("pid"), int):
                os.kill(running["pid"], signal.SIGTERM)
            _wait_for(lambda: not watchers.is_running(store), 20)

        sent: dict[str, float] = {}
        cold: list[str] = []
        try:
            for n in range(colds):
                before = time.time()
                message = box.send(f"agent{n % agents}", f"cold {n}", "x").id
                sent[message] = before
                cold.append(message)
                _wait_for(lambda k=n + 1: len(lines()) >= k, 30)
                if n + 1 < colds:
                    stop_watcher()
            for n in range(count):
                before = time.time()
                sent[box.send(f"agent{n % agents}", f"warm {n}", "x").id] = before
                time.sleep(gap)
            _wait_for(lambda: len(lines()) >= colds + count, 60)
        finally:
            stop_watcher()
        _latencies(sent, lines())  # each woken
        started = {i: float(t) for i, t in (line.split() for line in lines())}
        warm = [started[i] - t for i, t in sent.items() if i not in cold]
        return [started[i] - sent[i] for i in cold], warm


def _latencies(sent: dict[str, float], lines: list[str]) -> list[float]:
    """Each send's time to its wake command's start, from the recorder's lines; every
    message sent must have started its own (:class:`NotDone` otherwise)."""
    started = {i: float(t) for i, t in (line.split() for line in lines)}
    never = [i for i in sent if i not in started]
    if never:
        raise NotDone(f"{len(never)} of {len(sent)} sends started no wake, e.g. {never[0]}")
    return [started[i] - t for i, t in sent.items()]


def _python_start() -> float:
    return process_time([sys.executable, "-c", "pass"])


def run() -> list[Row]:
    events = measure(int(os.environ.get("BENCH_WAKE_COUNT", "240")))
    cold, warm = measure_on_demand(int(os.environ.get("BENCH_WAKE_COUNT", "240")),
                                   int(os.environ.get("BENCH_WAKE_COLD", "8")))
    python = _python_start()
    polled = measure(40, poll=0.5)
    notices = measure(int(os.environ.get("BENCH_WAKE_COUNT", "240")), entry=_notifier)
    return [
        Row(f"send -> wake command start, watcher on events, {len(events)} msgs",
            f"p50 {ms(percentile(events, 50))}, p99 {ms(percentile(events, 99))}",
            PEERS, f"p99 <= {TARGET_P99 * 1000:.0f} ms",
            percentile(events, 99) <= TARGET_P99),
        Row(f"send -> wake command start, watcher started on demand (warm), {len(warm)} msgs",
            f"p50 {ms(percentile(warm, 50))}, p99 {ms(percentile(warm, 99))}",
            f"watch started by hand: p50 {ms(percentile(events, 50))}, "
            f"p99 {ms(percentile(events, 99))}", f"p99 <= {TARGET_P99 * 1000:.0f} ms",
            percentile(warm, 99) <= TARGET_P99),
        Row(f"first wake after a cold start (the send spawns the watcher), {len(cold)} starts",
            f"p50 {ms(percentile(cold, 50))}, p99 {ms(percentile(cold, 99))}",
            f"python -c pass {ms(python)}; watch running: p50 {ms(percentile(events, 50))}",
            "informational", None),
        Row(f"same, watcher polling every 0.5 s (fallback), {len(polled)} msgs",
            f"p50 {ms(percentile(polled, 50))}, p99 {ms(percentile(polled, 99))}",
            PEERS, "informational", None),
        Row(f"arrival -> notifier command start (no wake), on events, {len(notices)} msgs",
            f"p50 {ms(percentile(notices, 50))}, p99 {ms(percentile(notices, 99))}",
            PEERS, f"p99 <= {TARGET_P99 * 1000:.0f} ms",
            percentile(notices, 99) <= TARGET_P99),
    ]


if __name__ == "__main__":
    print(json.dumps([row.__dict__ for row in run()], indent=2))
