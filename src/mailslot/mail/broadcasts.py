"""Which standing broadcasts an agent is still to be served: one rule for every reader.

An agent is served each broadcast once (its seen set says which it was), and never its
own. Inbox, ``who`` and the session hooks all ask this; it imports only :mod:`.ids`, so
the hook path stays lean.
"""

from __future__ import annotations

from ..core.ids import sender_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Container, Iterable


def to_serve(live: Iterable[str], seen: Container[str], agent: str) -> list[str]:
    """The ids in ``live`` that ``agent`` has not been served and did not send."""
    return [i for i in live if i not in seen and sender_of(i) != agent]
