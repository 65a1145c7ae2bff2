"""The mailbox's settings (``config.json``), read with the rules that make them safe.

The store only loads and saves the raw mapping; this module says what each key means.
Keys mailslot does not manage are kept as they are. A malformed value that guards
something fails closed: the action is refused with a message naming the field.
"""

from __future__ import annotations

import os

from .errors import InvalidInput, StoreError
from .names import BROADCAST_RECIPIENT, check_name
from .text import DEFAULT_MAX_BODY_BYTES

TYPE_CHECKING = False  # typing and collections are not loaded on the hook path
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

DEFAULT_MIDTURN_INTERVAL = 30
DEFAULT_UNSURFACED_MINUTES = 60
"""``who`` names an agent whose mail sat unread and unshown to any model this long."""
"""Seconds a session goes at least between being shown mail and a mid-turn showing."""
DEFAULT_CONTEXT_BUDGET = 6144
"""Bytes one hook injection may add to a model's context, unless config.json says."""
MIN_CONTEXT_BUDGET = 2048
"""The smallest budget taken: the header, the count line, the answer line and one
message (its body cut short) fit in it."""

GOVERNOR_DEFAULTS: dict[str, int] = {
    "pair_sends_per_hour": 120, "agent_sends_per_hour": 360,
    "pair_wakes_per_hour": 60, "agent_wakes_per_hour": 120, "hop_limit": 40,
    "agent_bytes_per_hour": 4_000_000, "thread_bytes_per_hour": 1_000_000,
    "thread_turns_per_hour": 60,
}
"""The loop governor's limits when ``config.json`` says nothing (docs/security.md, "The
loop governor"; the rules are in :mod:`mailslot.mail.governor`). A pair exchanging a
message a minute (of 8 KB, woken each time) stays within them for as long as it likes."""


class Config:
    """A read view over the raw config mapping."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = dict(raw)
        self._agents: dict[str, dict[str, Any]] | None = None

    @property
    def owner(self) -> str | None:
        value = self.raw.get("owner")
        if value is None:
            return None
        try:
            return check_name(value, "config.json: owner")
        except InvalidInput as exc:
            raise StoreError(str(exc)) from None

    @property
    def max_body_bytes(self) -> int:
        value = self.raw.get("max_body_bytes", DEFAULT_MAX_BODY_BYTES)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise StoreError("config.json: max_body_bytes must be a positive whole number")
        return value

    def agents(self) -> dict[str, dict[str, Any]]:
        """Per-agent settings by name; an entry with a bad name or shape is an error.
        Checked once per view (a send asks four times, a watcher at each notification,
        each time over every agent), each caller given its own copy."""
        if self._agents is None:
            self._agents = self._checked_agents()
        return dict(self._agents)

    def _checked_agents(self) -> dict[str, dict[str, Any]]:
        return named_objects(self.raw, "agents", check_name)

    def agent(self, name: str) -> dict[str, Any]:
        return self.agents().get(name, {})

    def problems(self) -> list[str]:
        """Every malformed value, for ``doctor``."""
        found = []
        for check in (lambda: self.owner, lambda: self.max_body_bytes, self._agent_values,
                      lambda: self.context_budget(None),
                      lambda: self.require_credentials, self.governor,
                      self.unsurfaced_after, self.unread_alert):
            try:
                check()
            except StoreError as exc:
                found.append(str(exc))
        return found

    def _agent_values(self) -> None:
        """Raise for the first malformed per-agent value (the section's shape included)."""
        for name in self.agents():
            self.midturn_interval(name)
            self.context_budget(name)

    # Hooks ---------------------------------------------------------------------------
    def auto_continue_on_stop(self, name: str) -> bool:
        """May a Stop hook keep ``name``'s turn going to show new mail? Only if exactly true.

        Continuing a turn the agent meant to end is the owner's choice, so anything but
        JSON ``true`` (a string, a number, a malformed agents section) means no.
        """
        try:
            return self.agent(name).get("auto_continue_on_stop") is True
        except StoreError:
            return False

    def midturn_interval(self, name: str) -> float:
        """Seconds between mid-turn showings for ``name`` (0: never shown mid-turn).

        ``agents.<name>.midturn_interval_seconds``, 30 when absent; anything but a
        number of at least 0 is an error (the hook then shows nothing mid-turn).
        """
        value = self.agent(name).get("midturn_interval_seconds", DEFAULT_MIDTURN_INTERVAL)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
            raise StoreError(f"config.json: agents.{name}.midturn_interval_seconds must be "
                             "a number of seconds, 0 or more")
        return float(value)

    def unsurfaced_after(self) -> float:
        """Seconds after which ``who`` calls unread mail no model was shown stuck:
        ``unsurfaced_after_minutes`` (default :data:`DEFAULT_UNSURFACED_MINUTES`);
        anything but a positive number is an error, naming the field."""
        value = self.raw.get("unsurfaced_after_minutes", DEFAULT_UNSURFACED_MINUTES)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise StoreError("config.json: unsurfaced_after_minutes must be a number of "
                             "minutes, more than 0")
        return float(value) * 60

    def context_budget(self, name: str | None) -> int:
        """The most bytes one injection into ``name``'s sessions may hold (``None``: the
        mailbox-wide value).

        ``agents.<name>.context_budget_bytes``, else the top-level
        ``context_budget_bytes``, else :data:`DEFAULT_CONTEXT_BUDGET`; anything but a
        whole number of at least :data:`MIN_CONTEXT_BUDGET` is an error (the hook then
        keeps to the default and says so on stderr).
        """
        where, value = "context_budget_bytes", self.raw.get("context_budget_bytes")
        own = None if name is None else self.agent(name).get("context_budget_bytes")
        if own is not None:
            where, value = f"agents.{name}.context_budget_bytes", own
        if value is None:
            return DEFAULT_CONTEXT_BUDGET
        if isinstance(value, bool) or not isinstance(value, int) \
                or value < MIN_CONTEXT_BUDGET:
            raise StoreError(f"config.json: {where} must be a whole number of bytes, "
                             f"{MIN_CONTEXT_BUDGET} or more")
        return value

    def unread_alert(self) -> float | None:
        """``alerts.unread_after_minutes`` in seconds: the owner is told of unread mail
        older than that (:mod:`mailslot.service.aging`); ``None``: no alerts."""
        section = self.raw.get("alerts")
        if section is None:
            return None
        value = section.get("unread_after_minutes") if isinstance(section, dict) else "?"
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise StoreError("config.json: alerts.unread_after_minutes must be a number of "
                             "minutes above 0")
        return float(value) * 60

    # Bounded authority ---------------------------------------------------
    @property
    def require_credentials(self) -> bool:
        """Only credentialed processes may write: exactly ``true``; a value that is not a
        JSON boolean fails closed (refused, naming the field)."""
        value = self.raw.get("require_credentials", False)
        if not isinstance(value, bool):
            raise StoreError("config.json: require_credentials must be true or false; "
                             "writes are refused until it is fixed")
        return value

    # The loop governor ---------------------------------------------------------
    def governor(self) -> dict[str, Any]:
        """The ``governor`` section with its defaults: each limit a number above 0 or
        ``null`` (no such limit), ``paused`` a list of agent names (``all``: everyone).
        A malformed value fails closed: the caller refuses agents' sends, naming it."""
        section = object_at(self.raw, "governor")
        values: dict[str, Any] = {}
        for key, default in GOVERNOR_DEFAULTS.items():
            value = section.get(key, default)
            if value is not None and (isinstance(value, bool)
                                      or not isinstance(value, (int, float))
                                      or not value > 0):
                raise StoreError(f"config.json: governor.{key} must be a number above 0 "
                                 "or null (no limit)")
            values[key] = value
        paused = section.get("paused", [])
        if not isinstance(paused, list):
            raise StoreError("config.json: governor.paused must be a list of agent names")
        try:
            values["paused"] = [name if name == BROADCAST_RECIPIENT
                                else check_name(name, "config.json: governor.paused entry")
                                for name in paused]
        except InvalidInput as exc:
            raise StoreError(str(exc)) from None
        return values

    # Agents on several machines --------------------------------------------
    def wakes_on(self, name: str, machine: str, seen_on: str | None = None) -> bool:
        """May the watcher on ``machine`` wake ``name``? Yes unless its ``host`` names
        another machine. Without ``host``, the machine where its presence was last seen
        (``seen_on``) is its host; an agent never seen and without ``host`` is woken by
        any watcher; a ``host`` that is not text, by none."""
        host = self.agent(name).get("host", seen_on)
        return host is None or host == machine

    # Starting sessions ---------------------------------------------------------
    def launch(self) -> dict[str, Any]:
        """The ``launch`` section (guardrails for ``mailslot start``; rules in
        :mod:`mailslot.launch.starting`); absent is ``{}``, anything but an object is an error."""
        return object_at(self.raw, "launch")

    # A2A (serve --http) ---------------------------------------------------------
    def a2a(self) -> dict[str, Any]:
        """The ``a2a`` section: ``push_hosts`` (the hosts a caller's push notifications
        may go to) and ``remotes`` (remote A2A agents by name, for ``mailslot a2a``);
        absent is ``{}``, anything but an object is an error (fail closed)."""
        return object_at(self.raw, "a2a")


def object_at(raw: Mapping[str, Any], section: str) -> dict[str, Any]:
    """``raw[section]``, absent ``{}``: an object, or an error naming the field (a
    section of any other type fails closed)."""
    found = raw.get(section, {})
    if not isinstance(found, dict):
        raise StoreError(f"config.json: {section} must be an object")
    return found


def named_objects(raw: Mapping[str, Any], section: str,
                  check: Callable[[object, str], str]) -> dict[str, dict[str, Any]]:
    """``raw[section]``: an object of objects by name (``agents``, ``peers``), each name
    passed through ``check``; anything else fails closed, naming the field."""
    result: dict[str, dict[str, Any]] = {}
    for key, value in object_at(raw, section).items():
        try:
            name = check(key, f"config.json: {section} key")
        except InvalidInput as exc:
            raise StoreError(str(exc)) from None
        if not isinstance(value, dict):
            raise StoreError(f"config.json: {section}.{name} must be an object")
        result[name] = value
    return result


def this_machine(env: Mapping[str, str] = os.environ) -> str:
    """This machine's name for ``agents.NAME.host``: ``MAILSLOT_HOST``, else the host
    name."""
    return env.get("MAILSLOT_HOST") or hostname()


def hostname() -> str:
    """This machine's host name (without importing :mod:`socket` where the OS can tell):
    what presence and session records name a machine by."""
    try:
        return os.uname().nodename
    except AttributeError:  # Windows
        import socket

        return socket.gethostname()
