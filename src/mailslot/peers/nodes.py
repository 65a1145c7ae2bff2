"""This mailbox as a node: its name and its Ed25519 key pair.

* **name**: ``node`` in config.json, else made from the host name
  (:func:`mailslot.core.addresses.from_host`).
* **public key**: kept in the mailbox (:mod:`.state`, namespace ``node``), so a
  backup, a migration and every machine sharing a database see which key is the node's.
* **private key**: never in the mailbox, never sent anywhere: a 0600 PEM file
  (PKCS#8) in a 0700 folder of the user's configuration,
  ``$XDG_CONFIG_HOME/mailslot/nodes/<fingerprint>.pem`` (``~/.config`` when unset),
  named by the public key's fingerprint. A PostgreSQL mailbox has no folder of its own
  and may be used from several machines: the machine that made the key holds it, and
  another machine carrying the node's peer traffic needs a copy of that file (it is
  refused in one line until it has one, never given a second key).

The key is made on first use, under the store's one add-if-absent: two processes (or
machines) racing to make it keep exactly one, the first recorded.
"""

from __future__ import annotations

import base64
import hashlib
import os
import stat

from ..core.addresses import check_node, from_host
from ..core.config import hostname
from ..core.durable import CREATE, make_folders, open_file, read_open
from ..core.errors import InvalidInput, StoreError, UnsafePath

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from .state import PeerState


def node_name(config: Mapping[str, Any]) -> str:
    """This mailbox's node name: ``node`` in config.json (checked: a bad one fails
    closed, naming the field), else made from the host name."""
    raw = config.get("node")
    if raw is None:
        return from_host(hostname())
    try:
        return check_node(raw, "config.json: node")
    except InvalidInput as exc:
        raise StoreError(str(exc)) from None


def fingerprint(public: bytes) -> str:
    """``SHA256:<base64>`` of a raw public key, as ``ssh-keygen -l`` shows one."""
    digest = base64.b64encode(hashlib.sha256(public).digest()).decode("ascii")
    return "SHA256:" + digest.rstrip("=")


def encode(public: bytes) -> str:
    return base64.b64encode(public).decode("ascii")


def decode(text: object) -> bytes:
    """A raw Ed25519 public key from its base64 text; :class:`InvalidInput` if it is not one."""
    try:
        raw = base64.b64decode(str(text), validate=True)
    except ValueError:
        raw = b""
    if len(raw) != 32:
        raise InvalidInput("not an Ed25519 public key")
    return raw


class NodeKey:
    """This node's key pair: what signs every envelope it sends."""

    __slots__ = ("private", "public")

    def __init__(self, private: Ed25519PrivateKey) -> None:
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

        self.private = private
        self.public = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.public)

    def sign(self, data: bytes) -> bytes:
        return self.private.sign(data)


def key_folder(env: Mapping[str, str] = os.environ) -> str:
    config = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(config, "mailslot", "nodes")


def _file_name(public: bytes) -> str:
    return hashlib.sha256(public).hexdigest()[:32] + ".pem"


def recorded_key(state: PeerState) -> bytes | None:
    """The node's public key as the mailbox records it, or ``None`` before it has one."""
    record = state.get("node", ())
    if not isinstance(record, dict):
        return None
    try:
        return decode(record.get("key"))
    except InvalidInput:
        raise StoreError("the mailbox's node record holds no readable public key (peers/"
                         "node.json); mailslot doctor names it") from None


def node_key(state: PeerState, env: Mapping[str, str] = os.environ) -> NodeKey:
    """This node's key pair: read from its file, or made (and recorded) on first use."""
    public = recorded_key(state)
    if public is None:
        made = _make(env)
        if state.add("node", (), {"key": encode(made.public),
                                  "fingerprint": made.fingerprint}):
            return made
        os.unlink(os.path.join(key_folder(env), _file_name(made.public)))
        public = recorded_key(state)  # another process recorded its own first
        if public is None:
            raise StoreError("the mailbox's node record went away while it was made")
    return _read(public, env)


def _make(env: Mapping[str, str]) -> NodeKey:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        NoEncryption,
        PrivateFormat,
    )

    made = NodeKey(Ed25519PrivateKey.generate())
    folder = key_folder(env)
    make_folders(folder)
    pem = made.private.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    fd = open_file(os.path.join(folder, _file_name(made.public)), CREATE)
    try:
        os.write(fd, pem)
        os.fsync(fd)
    finally:
        os.close(fd)
    return made


def _read(public: bytes, env: Mapping[str, str]) -> NodeKey:
    """The private key of ``public`` from its file: a regular 0600 file of this user's,
    not a link; refused in one line otherwise, never quoted."""
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    path = os.path.join(key_folder(env), _file_name(public))
    try:
        fd = open_file(path, os.O_RDONLY)
    except FileNotFoundError:
        raise StoreError(f"this machine does not hold the node's private key "
                         f"({fingerprint(public)}); it belongs at {path}: copy it from the "
                         "machine that made it (docs/multi-host.md, Peers)") from None
    except (OSError, UnsafePath) as exc:
        raise StoreError(f"cannot read the node key {path}: {exc}") from None
    try:
        info = os.fstat(fd)
        if info.st_uid != os.geteuid() or stat.S_IMODE(info.st_mode) & 0o077:
            raise StoreError(f"the node key {path} is readable by others or not yours; "
                             "mailslot uses it only when it is yours and 0600")
        data = read_open(fd, 64 * 1024)
    finally:
        os.close(fd)
    try:
        loaded = NodeKey(load_pem_private_key(data, password=None))  # type: ignore[arg-type]
    except (ValueError, TypeError):
        raise StoreError(f"the node key {path} is not an Ed25519 key mailslot wrote"
                         ) from None
    if loaded.public != public:
        raise StoreError(f"the node key {path} does not match the mailbox's node key")
    return loaded
