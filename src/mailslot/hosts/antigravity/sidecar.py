"""The session's way in: its address and token, which change at every launch of the app.

Antigravity hands them to the programs it runs beside itself (its sidecars):
``install antigravity --sidecar`` registers ``mailslot sidecar antigravity``
(:func:`run`), which writes them, with its pid and the project id, into the mailbox
(:data:`SIDECAR_FILE`, 0600, atomically) and removes the file when the app ends it. A
wake or start reads that file (or the owner's ``credentials_file``) and refuses it unless
it is a regular file owned by this user, its writer (``pid``) is still running and
started before the file was written, and the address is on this machine; a missing or
stale file skips the wake (the mail waits in the inbox). The token never reaches an
argv, an outcome, the log or ``watch --validate``.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import sys

from .agentapi import ADDRESS_ENV, ID, PROJECT_ENV, TOKEN_ENV

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Any

SIDECAR_FILE = os.path.join("sidecars", "antigravity.json")
"""Where in the mailbox folder the sidecar leaves the session's credentials."""
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}
_PARENT_POLL = 5.0  # seconds between the sidecar's looks at whether the app still runs


class Credentials:
    """The session's address and token, from a file whose writer still runs (or the
    environment Antigravity gave this process), and the project id its writer was given
    (if any); ``source`` says which (``sidecar``, ``environment``)."""

    def __init__(self, address: str, token: str, project: str | None,
                 source: str = "sidecar") -> None:
        self.address = address
        self._token = token
        self.project = project
        self.source = source

    def __repr__(self) -> str:  # never show the token, even in a traceback
        return f"Credentials(address={self.address!r}, token=<hidden>)"

    @property
    def token(self) -> str:
        return self._token


class Unusable:
    """Why credentials cannot be used (never holding the token); ``gone``: there is no
    running session to reach (the file is missing, or its writer no longer runs)."""

    def __init__(self, reason: str, *, gone: bool = False) -> None:
        self.reason = reason
        self.gone = gone


def _loopback(address: str) -> bool:
    """Is ``address`` (``http(s)://HOST:PORT`` or ``HOST:PORT``) on this machine?"""
    from urllib.parse import urlsplit

    parts = urlsplit(address if "://" in address else f"//{address}")
    if parts.scheme not in ("", "http", "https"):
        return False
    try:
        return parts.hostname in _LOOPBACK and parts.port is not None
    except ValueError:  # a port that is not a number
        return False


def read_credentials(path: Path) -> Credentials | Unusable:
    """The credentials, or why they cannot be used."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # a FIFO must not hang us
    except FileNotFoundError:
        return Unusable(f"credentials file {path} does not exist (is Antigravity running "
                        "with mailslot's sidecar?)", gone=True)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return Unusable(f"credentials file {path} is a symlink; not followed")
        return Unusable(f"credentials file {path} cannot be read ({exc.strerror})")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            return Unusable(f"credentials file {path} is not a regular file owned by you")
        with os.fdopen(os.dup(fd), "rb") as handle:
            raw = handle.read(65536)
    finally:
        os.close(fd)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return Unusable(f"credentials file {path} is not valid JSON")
    if not isinstance(data, dict):
        return Unusable(f"credentials file {path} must hold a JSON object")
    address, token, pid = data.get("address"), data.get("token"), data.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return Unusable(f"credentials file {path} has no writer pid")
    stale = Unusable(f"the session that wrote {path} (pid {pid}) is no longer running",
                     gone=True)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return stale
    except PermissionError:
        return Unusable(f"the process that wrote {path} (pid {pid}) is not yours")
    from ...core.processes import started_after

    if started_after(pid, info.st_mtime):
        return stale
    if not isinstance(address, str) or not _loopback(address):
        return Unusable(f"credentials file {path} has no address on this machine; refused")
    if not isinstance(token, str) or not token or any(c in token for c in "\x00\r\n"):
        return Unusable(f"credentials file {path} has no usable token")
    project = data.get("project_id")
    return Credentials(address, token,
                       project if isinstance(project, str) and ID.fullmatch(project) else None)


def own_credentials(env: Mapping[str, str]) -> Credentials | Unusable | None:
    """The session's address, token and project from the environment Antigravity gives
    the programs it runs (a sidecar, its agent's terminal, an MCP server it started);
    ``None`` where it gave none."""
    address, token = env.get(ADDRESS_ENV, ""), env.get(TOKEN_ENV, "")
    if not address and not token:
        return None
    if not address or not token:
        return Unusable(f"{ADDRESS_ENV} and {TOKEN_ENV} come together from Antigravity; "
                        "only one is set here")
    if not _loopback(address):
        return Unusable(f"{ADDRESS_ENV} is not an address on this machine; refused")
    if any(c in token for c in "\x00\r\n"):
        return Unusable(f"{TOKEN_ENV} is not a usable token")
    project = env.get(PROJECT_ENV)
    return Credentials(address, token, project if project and ID.fullmatch(project)
                       else None, "environment")


def session_credentials(launch: Mapping[str, Any], store_folder: str | None,
                        env: Mapping[str, str]) -> Credentials | Unusable:
    """A start's way in: the owner's ``credentials_file``, else the session that runs
    this process (its ``ANTIGRAVITY_*`` environment), else the sidecar's file."""
    if not launch.get("credentials_file"):
        own = own_credentials(env)
        if own is not None:
            return own
    path = credentials_path(launch, store_folder)
    return path if isinstance(path, Unusable) else read_credentials(path)


def credentials_path(launch: Mapping[str, Any], store_folder: str | None) -> Path | Unusable:
    """The owner's ``credentials_file``, else the sidecar's file in the mailbox."""
    from pathlib import Path

    raw = launch.get("credentials_file")
    if isinstance(raw, str) and raw:
        return Path(raw).expanduser()
    if store_folder is None:
        return Unusable("the mailbox is not a folder, so no sidecar writes into it: set "
                        "launch.antigravity.credentials_file in config.json")
    return Path(store_folder) / SIDECAR_FILE


def project_source(given: str | None, launch: Mapping[str, Any],
                   found: Credentials, first: str) -> tuple[str | None, str | None]:
    """The project id and where it came from: ``given`` (a parameter, or the woken
    agent's own), the config's ``launch.antigravity.project_id``, the session's (the
    sidecar's file, or this process's environment)."""
    configured = launch.get("project_id")
    for value, source in ((given, first), (configured, "config"),
                          (found.project, found.source)):
        if isinstance(value, str) and value:
            return value, source
    return None, None


# The sidecar ----------------------------------------------------------------------------
def run(folder: str, env: Mapping[str, str]) -> int:
    """Write what Antigravity handed this sidecar into the mailbox at ``folder``, then
    wait until Antigravity ends it (a signal, or the app that started it gone), and
    remove it; the exit status."""
    import signal
    import threading
    from datetime import datetime

    address, token = env.get(ADDRESS_ENV, ""), env.get(TOKEN_ENV, "")
    if not address or not token:
        print(f"mailslot: {ADDRESS_ENV} and {TOKEN_ENV} are not set: run this only as "
              "Antigravity's sidecar (mailslot install antigravity --sidecar)",
              file=sys.stderr)
        return 1
    if not _loopback(address):
        print(f"mailslot: {ADDRESS_ENV} is not an address on this machine; refused",
              file=sys.stderr)
        return 1
    project = env.get(PROJECT_ENV)
    path = os.path.join(folder, SIDECAR_FILE)
    ended = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda *_: ended.set())
    parent = os.getppid()
    write_private(path, {"address": address, "token": token, "pid": os.getpid(),
                         "project_id": project if project and ID.fullmatch(project)
                         else None,
                         "written": datetime.now().astimezone().isoformat()})
    print(f"mailslot: the session's credentials are in {path}", file=sys.stderr)
    try:
        while not ended.wait(_PARENT_POLL):
            if os.getppid() != parent:  # Antigravity is gone: so is its session
                break
    finally:
        _remove_if_mine(path)
    return 0


def write_private(path: str, data: Mapping[str, Any]) -> None:
    """``data`` as ``path``, whole or not at all: a 0600 file beside it, synced, renamed
    over it, the folder synced (a reader never sees half a file)."""
    from ...core.durable import fsync_dir, make_folders, replace_file

    folder = os.path.dirname(path)
    make_folders(folder)  # a mailbox not made yet is made 0700, as every mailbox is
    replace_file(path, json.dumps(data))
    fsync_dir(folder)


def _remove_if_mine(path: str) -> None:
    """Remove the credentials file if this process wrote it (a newer sidecar's stays)."""
    from pathlib import Path

    from ...core.durable import read_file
    from ...core.errors import UnsafePath

    try:
        mine = json.loads(read_file(path, 1 << 16)).get("pid") == os.getpid()
    except (OSError, ValueError, AttributeError, UnsafePath):
        return
    if mine:
        Path(path).unlink(missing_ok=True)
