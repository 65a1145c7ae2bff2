"""``install HOST --remote URL --credential FILE`` against the real Claude Code, Codex and
Gemini CLI: each takes the entry mailslot wrote, reads the secret from
``$MAILSLOT_SECRET``, connects to a real ``serve --http`` and offers its model the tools;
the connection is a server session of the credential's agent (program ``http``)."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .conftest import VERSIONS
from .harness import MAILSLOT, World
from .test_checks import assert_connected, run_ok

Worlds = Callable[..., World]
REMOTE_HOSTS = ("claude", "codex", "gemini")


@pytest.fixture(params=[pytest.param(h, id=f"{h}-{VERSIONS[h]}") for h in REMOTE_HOSTS])
def host(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Callable[[World], str]]:
    """``served(world)``: a ``serve --http`` on the world's mailbox; its base URL."""
    started: list[subprocess.Popen[bytes]] = []

    def start(w: World) -> str:
        port = _free_port()
        with (tmp_path / f"serve-{port}.log").open("wb") as log:
            started.append(subprocess.Popen(
                [MAILSLOT, "--dir", str(w.mailbox), "serve", "--http", str(port)],
                env=w.env, cwd=w.project, stdout=subprocess.DEVNULL, stderr=log))
        deadline = time.monotonic() + 60
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    return f"http://127.0.0.1:{port}"
            assert time.monotonic() < deadline, "serve --http did not start"
            time.sleep(0.1)

    yield start
    for server in started:
        server.terminate()
        server.wait(30)


def test_remote_entry_accepted_and_connected(host: str, world: Worlds,
                                             served: Callable[[World], str]) -> None:
    w = world(host)
    credential = str(w.root / "alice.json")
    w.mailslot("agent", "add", "alice", "--credential-file", credential, "--yes")
    url = served(w)
    w.mailslot("install", host, "--remote", url, "--credential", credential)
    w.host.after_install(w)
    w.env["MAILSLOT_SECRET"] = json.loads(Path(credential).read_text())["secret"]
    assert_connected(host, w, run_ok(w))
    sessions = json.loads(w.mailslot("sessions", "alice", "--json").stdout)
    assert sessions and {s["program"] for s in sessions} == {"http"}
