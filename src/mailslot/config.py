"""The mailbox's settings (``config.json``), read with the rules that make them safe.

The store only loads and saves the raw mapping; this module says what each key means.
Keys mailslot does not manage are kept as they are. A malformed value that guards
something fails closed: the action is refused with a message naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping

from .errors import InvalidInput, StoreError
from .names import check_name
from .text import DEFAULT_MAX_BODY_BYTES

TYPE_CHECKING = False  # typing is not loaded on the hook path
if TYPE_CHECKING:
    from typing import Any

class Config:
    """A read view over the raw config mapping."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = dict(raw)

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
        """Per-agent settings by name; an entry with a bad name or shape is an error."""
        section = self.raw.get("agents", {})
        if not isinstance(section, dict):
            raise StoreError("config.json: agents must be an object")
        result: dict[str, dict[str, Any]] = {}
        for key, value in section.items():
            try:
                name = check_name(key, "config.json: agents key")
            except InvalidInput as exc:
                raise StoreError(str(exc)) from None
            if not isinstance(value, dict):
                raise StoreError(f"config.json: agents.{name} must be an object")
            result[name] = value
        return result

    def agent(self, name: str) -> dict[str, Any]:
        return self.agents().get(name, {})

    def problems(self) -> list[str]:
        """Every malformed value, for ``doctor``."""
        found = []
        for check in (lambda: self.owner, lambda: self.max_body_bytes, self.agents,
                      lambda: self.require_credentials):  # issue 12
            try:
                check()
            except StoreError as exc:
                found.append(str(exc))
        return found

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

    # issue 12: bounded authority ---------------------------------------------------
    @property
    def require_credentials(self) -> bool:
        """Only credentialed processes may write: exactly ``true``; a value that is not a
        JSON boolean fails closed (refused, naming the field)."""
        value = self.raw.get("require_credentials", False)
        if not isinstance(value, bool):
            raise StoreError("config.json: require_credentials must be true or false; "
                             "writes are refused until it is fixed")
        return value
