"""The ``datetime`` classes, loaded without running ``datetime.py`` where that is possible.

On Python 3.11, ``import datetime`` first executes the module's whole pure-Python copy
of the classes and then replaces them with the C ones from ``_datetime``: about a tenth
of a short command's start-up. The classes are the same objects either way
(``datetime.datetime is _datetime.datetime``), so values made here and there mix
freely. Python 3.12 and later skip the copy themselves, and an interpreter without
``_datetime`` gets the module. mailslot's modules take these names from here.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import UTC, datetime, timedelta, timezone
else:
    try:
        from _datetime import datetime, timedelta, timezone
    except ImportError:  # an interpreter without CPython's C module
        from datetime import datetime, timedelta, timezone
    UTC = timezone.utc  # noqa: UP017 (datetime.UTC would load datetime.py)

__all__ = ["UTC", "aware", "datetime", "span", "timedelta", "timezone"]


def aware(value: object) -> datetime | None:
    """An ISO 8601 time that names its offset (a receipt's ``ts``), or ``None`` for
    anything else."""
    if not isinstance(value, str):
        return None
    try:
        found = datetime.fromisoformat(value)
    except ValueError:
        return None
    return found if found.tzinfo is not None else None


def span(text: str, units: dict[str, int]) -> int | None:
    """``90d``, ``8h``: a whole number and one of ``units``' letters, as that many of
    the letter's units (``None``: not that form)."""
    raw = text.strip().lower()
    number, unit = raw[:-1], raw[-1:]
    if unit not in units or not number.isdigit() or not number.isascii():
        return None
    return int(number) * units[unit]
