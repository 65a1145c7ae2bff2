"""Who may be woken, for which mail, and how often to try: read from ``config.json``.

A message may *ask* for a wake (``send --wake`` writes ``delivery: wake``);
only the recipient's own config can allow one::

    "agents": {"reviewer": {"wake_on_mail": true, "wake_method": "tmux", ...}}

``wake_on_mail``: ``true`` wakes for every directed message, ``"requested"`` only for
messages sent with ``--wake``, ``false`` (or absent) never. Retries follow
``wake_retry`` (top level for everyone, or per agent, key by key)::

    "wake_retry": {"attempts": 3, "backoff_seconds": 5, "backoff_factor": 2,
                   "timeout_seconds": 600}

A malformed value fails closed: no wake, and the reason names the field.
"""

from __future__ import annotations

import math

from ..core.config import Config
from ..core.errors import StoreError
from ..core.message import Message
from ..core.values import dataclass, replace

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, Literal

    OptIn = Literal["always", "requested", "never"]
UNSUPPORTED = "unsupported"

_OPT_IN: dict[object, OptIn] = {True: "always", False: "never", "requested": "requested"}
_LIMITS: dict[str, tuple[float, float]] = {
    "attempts": (1, 20),
    "backoff_seconds": (0, 86_400),
    "backoff_factor": (1, 10),
    "timeout_seconds": (0.01, 86_400),
}


@dataclass(frozen=True)
class Retry:
    """How many attempts, how far apart, and how long one attempt may run."""

    attempts: int = 3
    backoff_seconds: float = 5.0
    backoff_factor: float = 2.0
    timeout_seconds: float = 600.0

    def delay_after(self, attempt: int) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1-based) before the next."""
        return self.backoff_seconds * self.backoff_factor ** (attempt - 1)

    def describe(self) -> str:
        gaps = [f"{self.delay_after(n):g} s" for n in range(1, self.attempts)]
        apart = f", waiting {' then '.join(gaps)}" if gaps else ""
        plural = "s" if self.attempts != 1 else ""
        return (f"{self.attempts} attempt{plural}{apart}; each may run "
                f"{self.timeout_seconds:g} s")


@dataclass(frozen=True)
class WakeSettings:
    """One agent's wake settings, checked."""

    agent: str
    opt_in: OptIn
    method: str  # "" when wakes are off and no method is named
    fields: Mapping[str, Any]  # the agent's whole config entry, for the method to read
    retry: Retry

    def describe_opt_in(self) -> str:
        return {
            "always": "woken for every directed message",
            "requested": "woken only for messages sent with --wake",
            "never": "never woken (wake_on_mail is false or absent)",
        }[self.opt_in]


def _retry(section: object, where: str, base: Retry) -> Retry:
    if section is None:
        return base
    if not isinstance(section, dict):
        raise StoreError(f"config.json: {where} must be an object")
    changes: dict[str, Any] = {}
    for key, value in section.items():
        if key not in _LIMITS:
            raise StoreError(f"config.json: {where}.{key} is not a retry setting "
                             f"(use {', '.join(_LIMITS)})")
        low, high = _LIMITS[key]
        number_ok = isinstance(value, int | float) and not isinstance(value, bool)
        if key == "attempts":
            number_ok = number_ok and isinstance(value, int)
        if not number_ok or not math.isfinite(value) or not low <= value <= high:
            kind = "a whole number" if key == "attempts" else "a number"
            raise StoreError(f"config.json: {where}.{key} must be {kind} from {low:g} to {high:g}")
        changes[key] = value
    return replace(base, **changes)


def settings_for(config: Config, agent: str) -> WakeSettings:
    """The checked settings for ``agent``; raises :class:`StoreError` naming a bad field."""
    entry = config.agents().get(agent, {})
    where = f"agents.{agent}"
    raw_opt_in = entry.get("wake_on_mail", False)
    opt_in = _OPT_IN.get(raw_opt_in) if isinstance(raw_opt_in, bool | str) else None
    if opt_in is None:
        raise StoreError(f'config.json: {where}.wake_on_mail must be true, false or "requested"')
    method = entry.get("wake_method", "")
    if not isinstance(method, str):
        raise StoreError(f"config.json: {where}.wake_method must be text")
    if opt_in != "never" and not method:
        raise StoreError(f"config.json: {where}.wake_method is missing (wake_on_mail is on)")
    return WakeSettings(agent, opt_in, method, entry, _retry_of(config, agent, entry))


def refusal(settings: WakeSettings, message: Message) -> str | None:
    """Why ``message`` does not wake ``settings.agent`` (``None``: it may be woken)."""
    where = f"agents.{settings.agent}"
    if settings.opt_in == "never":
        return f"its config does not allow wakes ({where}.wake_on_mail is not set)"
    if settings.opt_in == "requested" and message.delivery != "wake":
        return f'the message did not ask for a wake ({where}.wake_on_mail is "requested")'
    if settings.method == UNSUPPORTED:
        return f'its host cannot be woken ({where}.wake_method is "unsupported")'
    return None


def in_session_wakes(config: Config, agent: str, method: str) -> Callable[[Message], bool] | None:
    """For a session that wakes itself (a waiter hook, a channel: a host's own methods): which
    messages may wake it, or ``None`` when the agent's config has not chosen ``method``.

    The same rule as the watcher's: the recipient's config decides, a malformed value
    fails closed (``None``).
    """
    try:
        settings = settings_for(config, agent)
    except StoreError:
        return None
    if settings.method != method or settings.opt_in == "never":
        return None
    return lambda message: refusal(settings, message) is None


def retry_for(config: Config, agent: str) -> Retry:
    """``agent``'s retry policy: top-level ``wake_retry``, then its own, key by key
    (notifiers use it too, whatever ``wake_on_mail`` says)."""
    return _retry_of(config, agent, config.agents().get(agent, {}))


def _retry_of(config: Config, agent: str, entry: Mapping[str, Any]) -> Retry:
    """:func:`retry_for`, from the agent's config entry read already."""
    retry = _retry(config.raw.get("wake_retry"), "wake_retry", Retry())
    return _retry(entry.get("wake_retry"), f"agents.{agent}.wake_retry", retry)
