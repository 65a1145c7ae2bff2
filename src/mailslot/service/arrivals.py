"""Directed mail that arrives while a long-running front end watches (``serve --channel``).

The rule, in one place: a message counts as arrived once, when it first shows up among
the agent's directed mail not yet done; what was there when watching began does not
count (the session was already shown it at its start). Broadcasts never count, mail for
another session of the agent (``name@session``) never counts, and only what the agent's
config lets ``method`` wake it for is reported (a message may only ask for a wake).
"""

from __future__ import annotations

from collections.abc import Callable

from ..core.config import Config
from ..core.errors import NotFound
from ..core.message import Message
from ..store.records import Watching
from ..wake.policy import in_session_wakes
from .mailbox import Mailbox


class Arrivals:
    """What is new for ``box``'s agent since the last look (the first look: since now)."""

    def __init__(self, box: Mailbox, method: str) -> None:
        self._box = box
        self._agent = box.agent
        self._method = method
        self._known = self._pending()

    def _pending(self) -> set[str]:
        return {i for i, _ in self._box.store.entries(self._agent, ("unread", "read"))}

    def watch(self, kick: Callable[[], None]) -> Watching | None:
        """Call ``kick`` when mail may have arrived (``None``: the caller polls)."""
        return self._box.store.watch(kick, mail_for=self._agent)

    def chosen(self) -> bool:
        """Does the agent's config (read afresh) choose this way of waking?"""
        return self._allowed() is not None

    def _allowed(self) -> Callable[[Message], bool] | None:
        return in_session_wakes(Config(self._box.store.load_config()), self._agent,
                                self._method)

    def new(self) -> list[Message]:
        """Headers of mail that arrived since the last call and may wake the agent."""
        pending = self._pending()
        fresh = sorted(pending - self._known)
        self._known = pending
        allowed = self._allowed() if fresh else None
        if allowed is None:
            return []
        found: list[Message] = []
        for message_id in fresh:
            try:
                message, _ = self._box.store.load(self._agent, message_id, header_only=True)
            except NotFound:
                continue  # finished already: nothing to wake for
            if allowed(message) and not message.ack and (  # an ack wakes nobody
                    message.instance is None or message.shown_to(self._box.my_instances())):
                found.append(message)  # (not another session's name@session)
        return found
