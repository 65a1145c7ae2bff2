"""Retention: the owner moves done mail older than an age into compressed month archives
(``mailslot archive --older-than 90d``), and back (``--restore``).

The rules are here: only the owner may archive or restore (an agent cannot hide mail
from the person), only done mail moves (unread and read mail stays where hooks and the
inbox look), and an age is a whole number of days or weeks. How a store keeps an archive
is the store's (the file store: ``archive/YYYY-MM.zip``, docs/format.md); archived mail
stays findable (:mod:`.finding` marks it), and ``show``/``status`` of an archived id say
where it is and how to bring it back.
"""

from __future__ import annotations

from ..core.dates import span, timedelta
from ..core.errors import InvalidInput
from ..service.mailbox import Mailbox

_UNITS = {"d": 1, "w": 7}
MAX_DAYS = 100 * 366


def age(text: str) -> timedelta:
    """``90d``, ``12w`` (days, weeks) as a time span; ``InvalidInput`` for anything else."""
    days = span(text, _UNITS)
    if days is None:
        raise InvalidInput(f"--older-than must be a number of days or weeks like 90d or "
                           f"12w (got {text!r})")
    if not 1 <= days <= MAX_DAYS:
        raise InvalidInput(f"--older-than must be between 1d and {MAX_DAYS}d (got {text!r})")
    return timedelta(days=days)


def archive(box: Mailbox, older_than: str, *, dry_run: bool = False) -> dict[str, int]:
    """Move every done message older than ``older_than`` into its month's archive (with
    ``dry_run``: say only); how many message copies per month. The owner only."""
    span = age(older_than)
    box.require_owner("archive mail")
    cutoff = box.now() - span
    return box.store.archive_done(f"{cutoff:%Y-%m-%d_%H%M%S}", dry_run=dry_run)


def restore(box: Mailbox, months: list[str] | None) -> dict[str, int]:
    """Move the archived mail of ``months`` (``YYYY-MM``; ``None``: all) back into the
    done folders; how many copies per month. The owner only."""
    for month in months or ():
        if len(month) != 7 or month[4] != "-" or not (month[:4] + month[5:]).isdigit():
            raise InvalidInput(f"a month is YYYY-MM, like 2026-09 (got {month!r})")
    box.require_owner("restore archived mail")
    return box.store.restore_archived(months)


def months(box: Mailbox) -> dict[str, int]:
    """Each archived month and how many message copies it holds. The owner only."""
    box.require_owner("list the archives")
    return box.store.archive_months()
