"""The environment of every program the watcher runs for a wake or a notice.

Built here, in one place, from an allow-list (docs/wake.md, "What a woken program is
given"): what any program needs (:data:`EVERY_PROGRAM`), what each host's program
reads as its host module declares it (:attr:`~mailslot.host_registry.host.Host.program_env`),
the names the owner adds in ``watcher.pass_env``, and the woken agent's own identity
(:func:`identity`). Nothing else of the watcher's environment passes: not its identity,
credential, secret or passphrase (nor a sender's, for an on-demand watcher inherits
its starter's environment), and no host's markers (``CLAUDECODE=1`` and the like, which
would make the woken program think it runs inside that host).
"""

from __future__ import annotations

import os

from ..core.errors import StoreError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

EVERY_PROGRAM = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TZ", "TERM",
    "COLORTERM", "TMPDIR", "XDG_*", "DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS",
    "http_proxy", "https_proxy", "no_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY",
    "NO_PROXY", "ALL_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "PGPASSFILE", "PGSERVICEFILE", "PGSYSCONFDIR",
    "PGSSLMODE", "PGSSLROOTCERT", "PGSSLCERT", "PGSSLKEY", "PGSSLCRL", "PGCONNECT_TIMEOUT",
    "MAILSLOT_HOST", "MAILSLOT_RELAY",
)
"""What any program needs, whichever host it is: where programs and the home folder
are, the user, language, time zone and terminal, the desktop session (a notifier),
proxies and trusted certificates, libpq's own files (a woken agent reading mail from a
database connects with its own ``~/.pgpass`` or service file, never the watcher's
password), and the two settings of this machine (``MAILSLOT_HOST``,
``MAILSLOT_RELAY``). ``NAME_*`` is a prefix."""

PASS_ENV = "watcher.pass_env"


class _Rules:
    """The allow-list and the markers, put together once per process (the hosts'
    modules are loaded for it)."""

    def __init__(self) -> None:
        from .. import host_registry as hosts

        every = hosts.every()
        allowed = [*EVERY_PROGRAM, *(n for h in every for n in h.program_env)]
        self.names = frozenset(n for n in allowed if not n.endswith("*"))
        self.prefixes = tuple(n[:-1] for n in allowed if n.endswith("*"))
        self.markers = frozenset(n for h in every for n in h.markers)

    def allows(self, name: str) -> bool:
        if name in self.markers or (name.startswith("MAILSLOT_") and name not in self.names):
            return False
        return name in self.names or name.startswith(self.prefixes)


_RULES: list[_Rules] = []


def rules() -> _Rules:
    if not _RULES:
        _RULES.append(_Rules())
    return _RULES[0]


def is_url(location: str) -> bool:
    return "://" in location


def store_env(location: str) -> dict[str, str]:
    """How a started or woken program is told which mailbox to use: ``MAILSLOT_DIR``
    (a folder) or ``MAILSLOT_STORE`` (a database, its address as shown, without a
    password: the program connects with its own libpq files)."""
    return {"MAILSLOT_STORE" if is_url(location) else "MAILSLOT_DIR": location}


def identity(agent: str, location: str) -> dict[str, str]:
    """Who the woken program is and which mailbox it reads."""
    return {"MAILSLOT_AGENT": agent, **store_env(location)}


def passed(names: tuple[str, ...], environ: Mapping[str, str] = os.environ
           ) -> dict[str, str]:
    """The variables of ``watcher.pass_env`` that the watcher has, with their values."""
    return {name: environ[name] for name in names if name in environ}


def woken(given: Mapping[str, str], environ: Mapping[str, str] = os.environ
          ) -> dict[str, str]:
    """The whole environment of a woken program: the allow-listed part of ``environ``
    (the watcher's), then ``given`` (the method's: the identity, the names the owner
    passes, a host's credentials for that one run)."""
    allowed = rules()
    return {**{k: v for k, v in environ.items() if allowed.allows(k)}, **given}


def pass_env(config: Mapping[str, Any]) -> tuple[str, ...]:
    """``watcher.pass_env``: names of the watcher's variables every woken program also
    gets (a key a host reads under a name you chose). Refused, naming the field: a name
    that is not one, a ``MAILSLOT_*`` name and a host's marker."""
    section = config.get("watcher") if isinstance(config, dict) else None
    raw = section.get("pass_env", []) if isinstance(section, dict) else []
    if not isinstance(raw, list) or not all(isinstance(n, str) for n in raw):
        raise StoreError(f"config.json: {PASS_ENV} must be a list of variable names")
    for name in raw:
        if not (name.isascii() and name.isidentifier() and len(name) <= 128):
            raise StoreError(f"config.json: {PASS_ENV} holds {name!r}, which is no "
                             "variable name")
        if name.startswith("MAILSLOT_") or name in rules().markers:
            raise StoreError(f"config.json: {PASS_ENV} holds {name}, which a woken program "
                             "never gets (its identity is its own; a host's marker would "
                             "make it think it runs inside that host)")
    return tuple(raw)
