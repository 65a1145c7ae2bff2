"""Encrypted backups in the age format (https://age-encryption.org/v1), through pyrage.

An encrypted backup is a plain backup (:mod:`mailslot.keep.backup`) encrypted as it is
written, to X25519 recipients (``age1...``) or a passphrase; the ``age`` command reads
it (``age -d -i key.txt mail.tar.gz.age | tar tz``). mailslot never stores a key or a
passphrase: the recipient is public, the identity file stays where its owner keeps it,
and a passphrase is read from the terminal (or ``MAILSLOT_PASSPHRASE``) each time.

age authenticates every 64 KiB chunk, so a bundle changed anywhere fails to decrypt;
restore decrypts into its private staging folder first and writes nothing to the
target until the whole bundle decrypted and every checksum matched.

pyrage is an optional extra (``pip install 'mailslot[encrypt]'``), imported only here
and only when encryption is asked for.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Callable, Sequence
from typing import Any, BinaryIO

from ..core.errors import InvalidInput, Refused

Sealer = Callable[[BinaryIO, BinaryIO], None]
PASSPHRASE_ENV = "MAILSLOT_PASSPHRASE"


def _pyrage() -> Any:
    try:
        import pyrage
    except ImportError:
        raise InvalidInput("encryption needs pyrage: pip install 'mailslot[encrypt]'"
                           ) from None
    return pyrage


def _ask(prompt: str) -> str:
    """``getpass`` on the controlling terminal. Without one it would warn (twice, as
    Python warnings) that echo cannot be turned off and read stdin instead; here that is
    no terminal at all (``EOFError``), so the one line of the caller is all that shows."""
    if os.name == "posix":
        try:
            os.close(os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY))
        except OSError:
            raise EOFError from None
    return getpass.getpass(prompt)


def passphrase(*, confirm: bool) -> str:
    """``MAILSLOT_PASSPHRASE`` if set, else asked for on the terminal (twice when
    encrypting); never an argument, which other users could read in ``ps``."""
    given = os.environ.get(PASSPHRASE_ENV)
    if given is None:
        try:
            given = _ask("passphrase: ")
            if confirm and _ask("passphrase again: ") != given:
                raise InvalidInput("the two passphrases differ; nothing was written")
        except (EOFError, OSError):
            raise InvalidInput(f"no terminal to ask for the passphrase: set "
                               f"{PASSPHRASE_ENV}") from None
    if not given:
        raise InvalidInput("an empty passphrase protects nothing")
    return given


def sealer(recipients: Sequence[str], secret: str | None) -> Sealer:
    """Encrypt to ``recipients`` (``age1...`` keys) or, with ``secret``, a passphrase
    (age allows one or the other, not both)."""
    age = _pyrage()
    if secret is not None:
        if recipients:
            raise InvalidInput("give --recipient or --passphrase, not both (age allows one)")

        def with_passphrase(plain: BinaryIO, out: BinaryIO) -> None:
            # pyrage's passphrase mode takes bytes, not a stream: the backup is held in
            # memory while it is encrypted (never written in the clear).
            out.write(age.passphrase.encrypt(plain.read(), secret))

        return with_passphrase
    if not recipients:
        raise InvalidInput("--encrypt needs --recipient age1... or --passphrase")
    keys = []
    for text in recipients:
        try:
            keys.append(age.x25519.Recipient.from_str(text.strip()))
        except age.RecipientError:
            raise InvalidInput(f"{text[:20]!r} is not an age recipient (age1...)") from None

    def to_keys(plain: BinaryIO, out: BinaryIO) -> None:
        age.encrypt_io(plain, out, keys)

    return to_keys


def unsealer(identity_file: str | None, secret: str | None) -> Sealer:
    """Decrypt with the X25519 identities in ``identity_file`` (as ``age-keygen`` writes
    it) or with a passphrase; a wrong key or a changed bundle is :class:`Refused`."""
    age = _pyrage()
    if secret is not None:
        def with_passphrase(sealed: BinaryIO, out: BinaryIO) -> None:
            try:
                out.write(age.passphrase.decrypt(sealed.read(), secret))
            except (age.DecryptError, ValueError):
                raise Refused("cannot decrypt the backup with that passphrase (or it was "
                              "changed): refused, nothing was restored") from None

        return with_passphrase
    if identity_file is None:
        raise InvalidInput("give --identity FILE or --passphrase")
    identities = _identities(age, identity_file)

    def with_keys(sealed: BinaryIO, out: BinaryIO) -> None:
        try:
            age.decrypt_io(sealed, out, identities)
        except (age.DecryptError, OSError, ValueError) as exc:  # a changed chunk: OSError
            raise Refused(f"cannot decrypt the backup with {identity_file} ({exc}): "
                          "refused, nothing was restored") from None

    return with_keys


def _identities(age: Any, path: str) -> list[Any]:
    try:
        with open(path, encoding="utf-8") as file:
            lines = [line.strip() for line in file]
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read the identity file {path}: {exc}") from None
    found = []
    for line in lines:
        if not line or line.startswith("#"):
            continue
        try:
            found.append(age.x25519.Identity.from_str(line))
        except age.IdentityError:
            raise InvalidInput(f"{path} holds a line that is not an age identity "
                               "(AGE-SECRET-KEY-1...)") from None
    if not found:
        raise InvalidInput(f"{path} holds no age identity (AGE-SECRET-KEY-1...)")
    return found
