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

A credential file holds ``agent``, ``secret``, ``store`` (the mailbox's location),
``generation`` and, for a child agent, ``parent_generation`` (the generation of its
parent it was issued under). The secret appears nowhere else: not in the store (only its
hash), not in any output, error, event or ``repr``.

Why SHA-256 and not a slow password hash: the secret is 256 random bits, not a password
a person chose, so it cannot be guessed from its hash however fast the hash is.

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
    path = refuse_inside_checkout(path)
    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    data = {"agent": credential.agent, "secret": credential.secret,
            "store": credential.store, "generation": credential.generation}
    if credential.parent_generation is not None:
        data["parent_generation"] = credential.parent_generation
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
    try:
        fd = open_file(path, os.O_RDONLY)  # no link, no FIFO: a regular file or nothing
    except OSError as exc:
        raise InvalidInput(f"cannot read the credential file {path} ({exc.strerror})"
                           ) from None
    except UnsafePath as exc:
        raise InvalidInput(f"cannot read the credential file: {exc}") from None
    try:
        info = os.fstat(fd)
        if info.st_mode & 0o077 or info.st_uid != os.geteuid():
            raise InvalidInput(f"the credential file {path} is open to other users; "
                               f"make it yours alone (chmod 600 {path}) or rotate it")
        raw = read_open(fd, 64 * 1024)
    finally:
        os.close(fd)
    try:
        data = jsontext.loads(raw.decode("utf-8"))
        credential = Credential(check_name(data["agent"], "credential agent"),
                                data["secret"], data["store"], data["generation"],
                                data.get("parent_generation"))
        if not (isinstance(credential.secret, str) and isinstance(credential.store, str)
                and type(credential.generation) is int
                and type(credential.parent_generation) in (int, type(None))):
            raise TypeError
    except (ValueError, UnicodeDecodeError, KeyError, TypeError, InvalidInput):
        raise InvalidInput(f"{path} is not a mailslot credential file") from None
    return credential
