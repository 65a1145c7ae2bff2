"""Two machines on one box, for the tests of peers: an ``sshd`` of the test's own on
loopback, and two nodes, each a HOME and a mailbox, reached as two machines would be.

The sshd has its own host key and ``authorized_keys`` (the test's client key), listens
on 127.0.0.1 only, and keeps its port across restarts (a link taken down and brought
back). ssh reads ``~/.ssh/config`` from the password database, not ``$HOME``, so the
client's configuration is named with ``ssh -F FILE``, through ``--ssh-command``. Each
node's mailslot on the far side is a small script (``--remote-mailslot``) that gives
it that node's HOME, as the other machine's login would: the remote command line is
only that script's path and ``peer serve``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

SSHD = "/usr/sbin/sshd"
MAILSLOT = Path(sys.executable).with_name("mailslot")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, up: bool, deadline: float = 30.0) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                if up:
                    return
        except OSError:
            if not up:
                return
        time.sleep(0.05)
    raise AssertionError(f"sshd on port {port} did not come {'up' if up else 'down'}")


@dataclass
class Sshd:
    """A running sshd on loopback (stop, start again on the same port)."""

    folder: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = None

    def setup(self) -> Sshd:
        self.folder.mkdir(parents=True, exist_ok=True)
        for key in ("hostkey", "clientkey"):
            if not (self.folder / key).exists():
                subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                                str(self.folder / key)], check=True)
        keys = self.folder / "authorized_keys"
        keys.write_bytes((self.folder / "clientkey.pub").read_bytes())
        keys.chmod(0o600)
        self.port = self.port or _free_port()
        (self.folder / "sshd_config").write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {self.folder}/hostkey\n"
            f"AuthorizedKeysFile {keys}\nPidFile {self.folder}/sshd.pid\nStrictModes no\n"
            "UsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            "PermitRootLogin prohibit-password\nPubkeyAuthentication yes\n")
        Path("/run/sshd").mkdir(exist_ok=True)
        return self

    def start(self) -> Sshd:
        log = open(self.folder / "sshd.log", "ab")  # noqa: SIM115 (kept by the process)
        self.process = subprocess.Popen([SSHD, "-D", "-e", "-f",
                                         str(self.folder / "sshd_config")],
                                        stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        log.close()
        _wait_port(self.port, up=True)
        return self

    def stop(self) -> None:
        """Take the link down: sshd ends (each connection's own sshd child too)."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)
        _wait_port(self.port, up=False)

    def client_config(self, path: Path, aliases: dict[str, str]) -> Path:
        """An ssh client configuration naming each alias (all this sshd, as this user)."""
        user = os.environ.get("USER") or "root"
        blocks = [f"Host {alias}\n  HostName 127.0.0.1\n  Port {self.port}\n  User {user}\n"
                  f"  IdentityFile {self.folder}/clientkey\n  IdentitiesOnly yes\n"
                  f"  UserKnownHostsFile {self.folder}/known_hosts\n"
                  "  StrictHostKeyChecking accept-new\n  BatchMode yes\n"
                  "  ConnectTimeout 10\n  LogLevel ERROR\n" for alias in aliases]
        path.write_text("".join(blocks))
        return path


@dataclass
class Node:
    """One machine: a HOME, a mailbox (a folder or a database) and its node name."""

    name: str
    home: Path
    store: str
    remote: Path = field(default=Path())
    env_extra: dict[str, str] = field(default_factory=dict)

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("MAILSLOT_") and k != "XDG_CONFIG_HOME"}
        env.update(HOME=str(self.home), MAILSLOT_DIR=self.store,
                   MAILSLOT_ON_DEMAND_WATCHER="0", MAILSLOT_RELAY="0",
                   XDG_STATE_HOME=str(self.home / "state"))
        env.update({**self.env_extra, **extra})
        if "://" in self.store:
            env["MAILSLOT_STORE"] = self.store
        return env

    def run(self, *argv: str, check: bool = True, stdin: str | None = None,
            **extra: str) -> subprocess.CompletedProcess[str]:
        """``mailslot ARGV`` as this node's user, in this node's mailbox."""
        done = subprocess.run([str(MAILSLOT), *argv], env=self.env(**extra), text=True,
                              capture_output=True, timeout=120, input=stdin, check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"mailslot {' '.join(argv)} on {self.name}: "
                                 f"{done.returncode}\n{done.stdout}\n{done.stderr}")
        return done

    def write_remote(self, folder: Path, body: str = "") -> Path:
        """The script ssh runs on this node (``--remote-mailslot``): this node's HOME,
        then mailslot (``body``: Python that runs first, a test's pause point)."""
        self.remote = folder / f"mailslot-on-{self.name}"
        env = " ".join(f"{k}={v}" for k, v in self.env().items()
                       if k in ("HOME", "XDG_STATE_HOME", "MAILSLOT_ON_DEMAND_WATCHER",
                                "MAILSLOT_RELAY", *self.env_extra))
        if body:
            (folder / f"shim-{self.name}.py").write_text(body)
            run = f'exec {sys.executable} {folder}/shim-{self.name}.py "$@"'
        else:
            run = f'exec {MAILSLOT} "$@"'
        self.remote.write_text(f"#!/bin/sh\nexport {env}\n{run}\n")
        self.remote.chmod(0o755)
        return self.remote


def clients(config: Path) -> list[int]:
    """The pids of the ssh clients run with ``config`` (the links a test's node opened)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv[:1] == [b"ssh"] and str(config).encode() in argv:
                found.append(int(entry))
    return found


def cut(config: Path) -> int:
    """Break every open link of ``config``: its ssh clients killed, by pid."""
    pids = clients(config)
    for pid in pids:
        with contextlib.suppress(OSError):  # it ended by itself meanwhile
            os.kill(pid, signal.SIGKILL)
    return len(pids)
