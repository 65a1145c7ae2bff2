"""The conversation over a link: who speaks when, and what each frame holds.

The client (the node that opened the link: ``peer add``, ``peer sync``, the watcher)
speaks first; the server (``peer serve`` on the other node) answers each frame in turn::

    hello   {"node", "key", "store", "roster"} -> welcome {"node", "key", "roster"}
                                                 or refused {"reason"}
    push    {"envelopes": [...]}              -> pushed {"results": [...]}
    pull    {"wait": seconds, "max": n}       -> items {"envelopes": [...]}
    ack     {"results": [...]}                   (no answer)
    roster  {}                                -> roster {"agents": [...]}
    bye     {}                                   (the server ends)

A result is ``{"eid", "outcome": "stored" | "duplicate" | "refused", "reason",
"refused": {agent: reason}}``: what the receiver did with one envelope (``refused`` per
agent when some of a message's recipients took it and some did not). A ``pull`` waits up
to ``wait`` seconds for something to give, and ends early when the client sends its
next frame, so one live link carries both ways with little delay.

The rules (which keys are pinned, who may send to whom) are the :class:`Host`'s: the
service implements it; this module only moves frames.
"""

from __future__ import annotations

import time
from typing import Protocol

from ..core.errors import MailslotError, Refused
from .frames import PREAMBLE, Stream, WireError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Envelope = dict[str, Any]
    Result = dict[str, Any]

HELLO_SECONDS = 30.0
ANSWER_SECONDS = 120.0
"""How long a client waits for an answer (a batch of a thousand messages, each synced)."""
IDLE_SECONDS = 300.0
"""A server ends a link on which the client said nothing this long (a laptop that slept
with the link open): a live client speaks at least every second."""
PULL_POLL_SECONDS = 0.02
"""How often a waiting pull looks at its outbox (cheap: one listing)."""
BATCH = 200
"""The most envelopes one frame carries."""


class Host(Protocol):
    """What the server side of a link does with each frame (the service's rules)."""

    def take(self, envelopes: list[Envelope]) -> list[Result]:
        """Verify and store what the client pushed; one result each."""

    def give(self, most: int) -> list[Envelope]:
        """What waits here for the client, sealed (at most ``most``)."""

    def acked(self, results: list[Result]) -> None:
        """The client's results for what :meth:`give` gave."""

    def roster(self) -> list[str]:
        """This node's agents, for the client's ``who``."""


def serve(stream: Stream, welcome: Callable[[dict[str, Any]], tuple[Host, dict[str, Any]]]
          ) -> None:
    """The server's side: greet, take the client's hello (``welcome`` opens the mailbox
    it names and answers it, or raises :class:`Refused`), answer each frame, return when
    the client is done."""
    _write_raw(stream, PREAMBLE)
    try:
        host, answer = welcome(stream.receive(HELLO_SECONDS))
    except MailslotError as exc:
        stream.send({"type": "refused", "reason": str(exc)})
        return
    stream.send(answer)
    while True:
        try:
            frame = stream.receive(IDLE_SECONDS)
        except WireError:
            return  # the client went away (or slept): what was not answered goes again
        kind = frame.get("type")
        if kind == "push":
            stream.send({"type": "pushed", "results": host.take(_envelopes(frame))})
        elif kind == "pull":
            stream.send({"type": "items", "envelopes": _pulled(stream, host, frame)})
        elif kind == "ack":
            results = frame.get("results")
            host.acked(results if isinstance(results, list) else [])
        elif kind == "roster":
            stream.send({"type": "roster", "agents": host.roster()})
        else:
            return  # bye, or a frame this version does not know


def _write_raw(stream: Stream, data: bytes) -> None:
    import os

    while data:
        data = data[os.write(stream.write_fd, data):]


def _envelopes(frame: dict[str, Any]) -> list[Envelope]:
    found = frame.get("envelopes")
    return found[:BATCH] if isinstance(found, list) else []


def _pulled(stream: Stream, host: Host, frame: dict[str, Any]) -> list[Envelope]:
    """What :meth:`Host.give` has, waiting up to the pull's ``wait`` for something,
    and no longer once the client sends another frame."""
    most = frame.get("max")
    most = most if isinstance(most, int) and 0 < most <= BATCH else BATCH
    wait = frame.get("wait")
    deadline = time.monotonic() + (float(wait) if isinstance(wait, (int, float))
                                   and 0 < wait <= 60 else 0.0)
    while True:
        found = host.give(most)
        if found or time.monotonic() >= deadline or stream.readable(PULL_POLL_SECONDS):
            return found


class Session:
    """The client's side of one link: each call one frame and its answer."""

    def __init__(self, stream: Stream) -> None:
        self.stream = stream

    def hello(self, node: str, key: str, store: str | None, roster: list[str]
              ) -> dict[str, Any]:
        """The server's welcome; :class:`Refused` with its reason otherwise."""
        self.stream.send({"type": "hello", "version": 1, "node": node, "key": key,
                          "store": store, "roster": roster})
        answer = self.stream.receive(HELLO_SECONDS)
        if answer.get("type") == "refused":
            raise Refused(f"the other node refused the link: {answer.get('reason')}")
        if answer.get("type") != "welcome":
            raise WireError("the other node did not welcome this one")
        return answer

    def push(self, envelopes: list[Envelope]) -> list[Result]:
        self.stream.send({"type": "push", "envelopes": envelopes})
        return self.expect_pushed()

    def expect_pushed(self) -> list[Result]:
        return _results(self._expect("pushed"))

    def start_pull(self, wait: float, most: int = BATCH) -> None:
        self.stream.send({"type": "pull", "wait": wait, "max": most})

    def finish_pull(self) -> list[Envelope]:
        found = self._expect("items").get("envelopes")
        return found if isinstance(found, list) else []

    def ack(self, results: list[Result]) -> None:
        self.stream.send({"type": "ack", "results": results})

    def roster(self) -> list[str]:
        self.stream.send({"type": "roster"})
        agents = self._expect("roster").get("agents")
        return [a for a in agents if isinstance(a, str)] if isinstance(agents, list) else []

    def bye(self) -> None:
        self.stream.send({"type": "bye"})

    def _expect(self, kind: str) -> dict[str, Any]:
        answer = self.stream.receive(ANSWER_SECONDS)
        if answer.get("type") != kind:
            raise WireError(f"the other node answered {answer.get('type')!r}, not {kind!r}")
        return answer


def _results(answer: dict[str, Any]) -> list[Result]:
    found = answer.get("results")
    return [r for r in found if isinstance(r, dict)] if isinstance(found, list) else []
