"""Every test owns its world: a fresh mailbox folder, a fresh HOME, no inherited identity."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from mailslot import FileStore, Mailbox
from mailslot.access.identity import Identity
from mailslot.frontends.cli.main import main
from pgcluster import Cluster, cluster

TYPE_CHECKING = False
if TYPE_CHECKING:
    from httpkit import Running


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "home"
    work = tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("MAILSLOT_DIR", str(tmp_path / "mailbox"))
    monkeypatch.delenv("MAILSLOT_AGENT", raising=False)
    for name in ("MAILSLOT_CREDENTIAL", "MAILSLOT_BINDING", "MAILSLOT_PEER_OF",
                 "XDG_CONFIG_HOME", "TMUX", "TMUX_PANE"):
        monkeypatch.delenv(name, raising=False)
    # No watcher started on demand unless a test asks (tests/test_watcher_on_demand.py):
    # the wake tests run their own, and a stray one would take their queued wakes.
    monkeypatch.setenv("MAILSLOT_ON_DEMAND_WATCHER", "0")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    # No hook relay either (tests/test_pg_relay.py starts its own): one started by a
    # PostgreSQL hook test would outlive the test by its idle time.
    monkeypatch.setenv("MAILSLOT_RELAY", "0")
    monkeypatch.chdir(work)
    yield tmp_path


@pytest.fixture
def home(isolated: Path) -> Path:
    """The test's ``HOME``."""
    return isolated / "home"


@pytest.fixture
def project(isolated: Path) -> Path:
    """The test's working folder (a project, outside git unless a test makes it one)."""
    return isolated / "work"


@pytest.fixture
def anyio_backend() -> str:
    """The async tests run on asyncio, as mailslot's servers do."""
    return "asyncio"


@pytest.fixture
def running(root: Path) -> Iterator[Running]:
    """A real ``serve --http`` (uvicorn on loopback) over the mailbox at ``root``."""
    from httpkit import start  # uvicorn: only the HTTP tests load it

    yield from start(root)


@pytest.fixture
def root(isolated: Path) -> Path:
    return isolated / "mailbox"


@pytest.fixture
def box(root: Path) -> Callable[[str | None], Mailbox]:
    """``box("claude")``: the service as that agent, over the test's mailbox."""

    def make(agent: str | None) -> Mailbox:
        identity = Identity(agent, "--agent") if agent is not None else None
        return Mailbox(FileStore(root), identity)

    return make


@dataclass
class Result:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
        ) -> Callable[..., Result]:
    """Run the real CLI entry point in-process; ``stdin`` may be bytes or str."""

    def run(*argv: str, stdin: bytes | str | None = None) -> Result:
        if stdin is not None:
            raw = stdin.encode() if isinstance(stdin, str) else stdin
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw)))
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse usage errors
            code = int(exc.code or 0)
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


@pytest.fixture
def bin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder first on PATH, for the fake host programs a test writes into it."""
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    return folder


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """One throwaway PostgreSQL cluster for the whole run (see tests/pgcluster.py)."""
    with cluster() as running:
        yield running


@pytest.fixture
def owned(root: Path) -> FileStore:
    """The test's mailbox with an owner, ``sarah`` (archiving is the owner's)."""
    from support import put_config

    store = FileStore(root)
    put_config(store, {"owner": "sarah"})
    return store
