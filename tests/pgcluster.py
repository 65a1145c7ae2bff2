"""A throwaway PostgreSQL cluster for the tests: Debian's ``initdb`` and ``pg_ctl`` in a
temporary folder, on a free loopback port, run as the unprivileged ``postgres`` user
when the tests run as root (``initdb`` refuses root), removed afterwards."""

from __future__ import annotations

import glob
import os
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import count


def bindir() -> str | None:
    """Where ``initdb`` is: ``pg_config --bindir``, else the newest Debian version."""
    try:
        found = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True,
                               check=True).stdout.strip()
        if os.path.exists(os.path.join(found, "initdb")):
            return found
    except (OSError, subprocess.CalledProcessError):
        pass
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                      key=lambda p: int(p.split("/")[-3]))
    return os.path.dirname(versions[-1]) if versions else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """A running cluster; :meth:`new_database` gives each test its own database."""

    def __init__(self, port: int, start: list[str] | None = None,
                 pg_ctl: list[str] | None = None) -> None:
        self.port = port
        self._numbers = count()
        self._start, self._pg_ctl = start or [], pg_ctl or []

    def stop(self, mode: str = "fast") -> None:
        """Stop the server as its administrator would (``fast``: clients are cut off,
        their open transactions rolled back)."""
        subprocess.run([*self._pg_ctl, "-m", mode, "-w", "stop"], check=True,
                       capture_output=True)

    def start(self) -> None:
        subprocess.run(self._start, check=True, capture_output=True)

    def url(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def admin(self, sql: str, database: str = "postgres") -> None:
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True) as conn:
            conn.execute(sql)  # type: ignore[arg-type]

    def new_database(self, *, init: bool = True) -> str:
        """A new database, with mailslot's schema made as ``mailslot init`` makes it
        (the only command that makes one); ``init=False``: an empty database."""
        name = f"t{os.getpid()}_{next(self._numbers)}"
        self.admin(f"CREATE DATABASE {name}")
        url = self.url(name)
        if init:
            from mailslot.backends import open_store

            store = open_store(url)
            store.init()
            store.close()
        return url


@contextmanager
def cluster(*, durable: bool = False) -> Iterator[Cluster]:
    """Start a cluster and remove it whatever happens. Not ``durable`` (the tests):
    fsync off, since it is thrown away and the server is never killed under them;
    ``durable`` (the benchmarks): a commit is synced to disk, as in use."""
    found = bindir()
    if found is None:
        raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql)")
    folder = tempfile.mkdtemp(prefix="mailslot-pg-")
    as_user: list[str] = []
    if os.geteuid() == 0:
        import pwd

        user = pwd.getpwnam("postgres")
        os.chmod(folder, 0o700)
        os.chown(folder, user.pw_uid, user.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    data, port = os.path.join(folder, "data"), _free_port()
    pg_ctl = [*as_user, os.path.join(found, "pg_ctl"), "-D", data]
    try:
        subprocess.run([*as_user, os.path.join(found, "initdb"), "-D", data, "-U", "postgres",
                        "--auth=trust", "-E", "UTF8", "--no-sync"],
                       check=True, capture_output=True)
        options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c max_connections=200"
        if not durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        start = [*pg_ctl, "-w", "-t", "120", "-l", os.path.join(folder, "log"), "-o", options,
                 "start"]
        subprocess.run(start, check=True, capture_output=True)
        try:
            yield Cluster(port, start, pg_ctl)
        finally:
            subprocess.run([*pg_ctl, "-m", "immediate", "stop"], capture_output=True,
                           check=False)
    finally:
        # In the background: unlinking a cluster's ten thousand files can take minutes on
        # a busy disk, and the run must not wait on (or time out in) its clean-up.
        subprocess.run(["setsid", "--fork", "rm", "-rf", "--", folder], check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
