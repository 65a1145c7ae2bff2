"""Credential files: the private secret that lets a process speak as a registered agent.

API (the rules that use it are in :mod:`mailslot.access.authority`)::

    new_secret() -> str                      256 random bits, URL-safe text
    hash_secret(secret) -> str               "sha256:<hex>": what the store keeps
    secret_matches(stored_hash, secret)      constant-time comparison (hmac.compare_digest)
    default_path(agent, env) -> str          $XDG_CONFIG_HOME/mailslot/credentials/<agent>.json
                                             (~/.config when XDG_CONFIG_HOME is unset)
    refuse_inside_checkout(path) -> str      the absolute path, or InvalidInput inside a
                                             git worktree
    write_credential(credential, path) -> str    the 0600 JSON file (replaced whole);
                                             refused inside a git worktree
    read_credential(path) -> Credential      refuses a file others can read, a link, or a
                                             file that is not one mailslot wrote
    launcher_start(pid) -> str | None        checks a binding's launcher runs
    write_binding(credential, path, launcher) -> str
                                             the same, bound to process ``launcher`` and
                                             what it starts (``MAILSLOT_BINDING``)
    read_binding(path) -> Credential         a binding, only for a process ``launcher``
                                             started (or itself) while it runs: a regular
                                             0600 file of this user's, not a link, never
                                             inside a git worktree

A credential file holds ``agent``, ``secret``, ``store`` (the mailbox's location),
``generation`` and, for a child agent, ``parent_generation`` (the generation of its
parent it was issued under). The secret appears nowhere else: not in the store (only its
hash), not in any output, error, event or ``repr``.

Why SHA-256 and not a slow password hash: the secret is 256 random bits, not a password
a person chose, so it cannot be guessed from its hash however fast the hash is.

A binding is a credential a trusted launcher hands one child: it writes the file (``agent
add|rotate --credential-file FILE --bind-to PID``) and names it in the child's
environment, ``MAILSLOT_BINDING=FILE``. Besides the credential it names the launcher
(``bound_to``: its pid and start time), and it is good only in processes that launcher
started, and only while it runs: a copy of the path leaked to any other process, or kept
after the launcher ended, speaks as no one. It is not consumed on first read (a child
runs mailslot many times: its commands, its MCP server); its launcher removes it when the
child is done, and rotating the agent ends it at once.

hashlib, hmac and secrets are imported where they are used: loading them (OpenSSL) costs
more than a short CLI command's whole budget, and most commands never touch a secret.
"""

from __future__ import annotations

import os

from ..core import jsontext
from ..core.durable import open_file, read_open
from ..core.errors import InvalidInput, UnsafePath
from ..core.names import check_name
from .identity import git_toplevel

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

_PREFIX = "sha256:"


class Credential:
    """What a credential file holds; its ``repr`` never shows the secret."""

    __slots__ = ("agent", "generation", "parent_generation", "secret", "store")

    def __init__(self, agent: str, secret: str, store: str, generation: int,
                 parent_generation: int | None = None) -> None:
        self.agent = agent
        self.secret = secret
        self.store = store
        self.generation = generation
        self.parent_generation = parent_generation

    def __repr__(self) -> str:
        return (f"Credential(agent={self.agent!r}, store={self.store!r}, "
                f"generation={self.generation}, secret=<hidden>)")


def new_secret() -> str:
    """A fresh secret of 256 random bits."""
    import secrets

    return secrets.token_urlsafe(32)


def hash_secret(secret: str) -> str:
    """What the store keeps in place of ``secret``."""
    import hashlib

    return _PREFIX + hashlib.sha256(secret.encode("utf-8")).hexdigest()


def secret_matches(stored_hash: str, secret: str) -> bool:
    """Does ``secret`` hash to ``stored_hash``? Compared in constant time."""
    import hmac

    return hmac.compare_digest(stored_hash.encode("ascii", "replace"),
                               hash_secret(secret).encode("ascii"))


def default_path(agent: str, env: Mapping[str, str] = os.environ) -> str:
    """Where ``agent``'s credential goes unless the user names a file."""
    config = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(config, "mailslot", "credentials", f"{agent}.json")


def refuse_inside_checkout(path: str) -> str:
    """``path`` made absolute, or ``InvalidInput`` if it lies inside a git worktree."""
    path = os.path.abspath(os.path.expanduser(path))
    top = git_toplevel(os.path.dirname(path))
    if top is not None:
        raise InvalidInput(f"refusing to write a credential inside the git checkout {top}; "
                           "choose a folder outside any checkout (default: "
                           "$XDG_CONFIG_HOME/mailslot/credentials/)")
    return path


def write_credential(credential: Credential, path: str) -> str:
    """Write the 0600 file (replacing an older one whole); return its absolute path.

    Refused inside a git worktree: a secret there is one ``git add -A`` from being
    published. The folders made for it are 0700.
    """
    return _write(path, _fields(credential))


def write_binding(credential: Credential, path: str, launcher: int) -> str:
    """Write ``credential`` as a binding for process ``launcher`` and what it starts
    (see the module's docstring); return its absolute path."""
    start = launcher_start(launcher)
    return _write(path, {**_fields(credential),
                         "bound_to": {"pid": launcher, "start": start}})


def launcher_start(launcher: int) -> str | None:
    """The start time of ``launcher``, a running process a binding can be for (``None``
    where ``/proc`` cannot tell); ``InvalidInput`` for any other pid."""
    from ..core.processes import start_ticks

    start = start_ticks(launcher)
    if launcher <= 1 or (start is None and (os.path.isdir("/proc/self")
                                            or not _alive(launcher))):
        raise InvalidInput(f"--bind-to {launcher} is not a running process of yours (the "
                           "launcher the binding is for)")
    return start


def _fields(credential: Credential) -> dict[str, object]:
    data: dict[str, object] = {"agent": credential.agent, "secret": credential.secret,
                               "store": credential.store,
                               "generation": credential.generation}
    if credential.parent_generation is not None:
        data["parent_generation"] = credential.parent_generation
    return data


def _write(path: str, data: Mapping[str, object]) -> str:
    path = refuse_inside_checkout(path)
    from ..core.durable import make_folders

    make_folders(os.path.dirname(path))
    import json  # indented for people; written once per agent, read by every command

    tmp = f"{path}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2)
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        os.rename(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
    return path


def read_credential(path: str) -> Credential:
    """The credential in ``path``; ``InvalidInput`` (never quoting the file) otherwise."""
    path = os.path.abspath(os.path.expanduser(path))
    raw, _ = _read_private(path, "credential file")
    return _credential(_parsed(raw, path), path)


def read_binding(path: str) -> Credential:
    """The credential a binding holds, for this process only if the launcher it names
    started it (or is it) and still runs; ``InvalidInput`` for a file that is not a
    private binding of this user's outside any checkout, ``Unauthorized`` for one that
    is not this process's."""
    path = os.path.abspath(os.path.expanduser(path))
    raw, mode = _read_private(path, "binding")
    if mode != 0o600:
        raise InvalidInput(f"the binding {path} is mode {mode:o}, not 600; its launcher "
                           "writes it 0600")
    for folder in {os.path.dirname(path), os.path.dirname(os.path.realpath(path))}:
        top = git_toplevel(folder)
        if top is not None:
            raise InvalidInput(f"the binding {path} is inside the git checkout {top}; a "
                               "binding is never read from a checkout")
    data = _parsed(raw, path)
    scope = data.get("bound_to")
    pid = scope.get("pid") if isinstance(scope, dict) else None
    start = scope.get("start") if isinstance(scope, dict) else None
    if type(pid) is not int or pid <= 1 or not isinstance(start, (str, type(None))):
        raise InvalidInput(f"{path} is not a binding mailslot wrote (MAILSLOT_CREDENTIAL "
                           "takes a credential file)")
    credential = _credential(data, path)
    _in_scope(path, pid, start)
    return credential


def _in_scope(path: str, launcher: int, start: str | None) -> None:
    """This process is ``launcher`` or one it started, and ``launcher`` still runs."""
    from ..core.errors import Unauthorized
    from ..core.processes import descends_from, start_ticks

    if not os.path.isdir("/proc/self"):  # no /proc here: the launcher's life alone
        ended = not _alive(launcher)
    else:
        ended = start is None or start_ticks(launcher) != start
    if ended:
        raise Unauthorized(f"the binding {path} was for process {launcher}, which has "
                           "ended; its launcher must hand out a new one")
    if os.path.isdir("/proc/self") and descends_from(os.getpid(), launcher) is not True:
        raise Unauthorized(f"the binding {path} is for process {launcher} and what it "
                           "starts; this process is not one of them")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def _read_private(path: str, what: str) -> tuple[bytes, int]:
    """The bytes of a regular file of this user's that no one else may read, opened by
    the one file opener (no link, never waiting on a FIFO), and its mode."""
    try:
        fd = open_file(path, os.O_RDONLY)
    except OSError as exc:
        raise InvalidInput(f"cannot read the {what} {path} ({exc.strerror})") from None
    except UnsafePath as exc:
        raise InvalidInput(f"cannot read the {what}: {exc}") from None
    try:
        info = os.fstat(fd)
        if info.st_mode & 0o077 or info.st_uid != os.geteuid():
            raise InvalidInput(f"the {what} {path} is open to other users; make it yours "
                               f"alone (chmod 600 {path}) or rotate it")
        return read_open(fd, 64 * 1024), info.st_mode & 0o7777
    finally:
        os.close(fd)


def _parsed(raw: bytes, path: str) -> dict[str, object]:
    try:
        data = jsontext.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        data = None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path} is not a mailslot credential file")
    return data


def _credential(data: Mapping[str, object], path: str) -> Credential:
    agent, secret, store = data.get("agent"), data.get("secret"), data.get("store")
    generation, parent = data.get("generation"), data.get("parent_generation")
    if not (isinstance(agent, str) and isinstance(secret, str) and isinstance(store, str)
            and type(generation) is int and type(parent) in (int, type(None))):
        raise InvalidInput(f"{path} is not a mailslot credential file")
    try:
        name = check_name(agent, "credential agent")
    except InvalidInput:
        raise InvalidInput(f"{path} is not a mailslot credential file") from None
    return Credential(name, secret, store, generation,
                      parent if isinstance(parent, int) else None)
