"""a2a-mailbox's file mailbox (``~/.agents-mailbox``).

``registry.json`` names the agents (they become config entries); ``queue/<agent>/``
holds messages waiting for ``<agent>`` (one JSON file each: unread); ``history/``
holds delivered ones (``*.jsonl``, one JSON message a line, or one JSON file each:
read); ``acks/<agent>`` (``.json`` list or ``.txt``/no suffix, one id a line) lists the
ids ``<agent>`` acknowledged (done). Message fields: ``id``, ``from``, ``to`` (a name
or a list), ``subject``, ``body``, ``timestamp``, ``reply_to``, ``thread_id``. A
message both queued and in the history is imported once, in its later state.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

from ...core.errors import InvalidInput
from ...core.message import STATES, State
from ..importing import Foreign, Report, Source
from .message_files import agents_of, first, foreign, listing, read_mail


def open_source(fmt: str, path: str, report: Report) -> Source:
    if not os.path.isdir(path):
        raise InvalidInput(f"{path} is not an a2a-mailbox folder")
    return A2A(path, report)


class A2A(Source):
    def __init__(self, root: str, report: Report) -> None:
        super().__init__(report)
        self.root = root
        self.agents = agents_of(os.path.join(root, "registry.json"), report, "registry.json")

    def messages(self) -> Iterator[Foreign]:
        found: dict[str, tuple[dict[str, Any], dict[str, State]]] = {}

        def add(fields: dict[str, Any], agent: str | None, state: State) -> None:
            key = str(fields.get("id") or "")
            if not key:
                self.report.note("an a2a-mailbox message without an id; not imported")
                return
            _, states = found.setdefault(key, (fields, {}))
            to = first(fields, ("to", "recipient", "recipients"))
            for name in [agent] if agent else (to if isinstance(to, list) else [to]):
                if name and STATES.index(state) > STATES.index(states.get(name, "unread")):
                    states[str(name)] = state

        queue = os.path.join(self.root, "queue")
        for agent in _folders(queue):
            for name in listing(os.path.join(queue, agent)):
                fields = read_mail(os.path.join(queue, agent, name), self.report,
                                   f"queue/{agent}/{name}")
                if fields is not None:
                    fields.setdefault("to", agent)
                    add(fields, agent, "unread")
        for fields in self._history():
            add(fields, None, "read")
        acks = self._acks()
        for key, (fields, states) in sorted(found.items(),
                                            key=lambda kv: str(first(kv[1][0], ("timestamp",
                                                                               "date")))):
            item = foreign("a2a-mailbox", key, fields, owner=None, state=None)
            item.states = dict(states)
            for agent in item.to:
                if key in acks.get(agent, set()):
                    item.states[agent] = "done"
            yield item

    def _history(self) -> Iterator[dict[str, Any]]:
        folder = os.path.join(self.root, "history")
        if not os.path.isdir(folder):
            return
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if name.endswith(".jsonl"):
                try:
                    with open(path, encoding="utf-8") as file:
                        lines = file.read().splitlines()
                except (OSError, UnicodeDecodeError) as exc:
                    self.report.note(f"history/{name}: unreadable ({exc})")
                    continue
                for number, line in enumerate(lines, 1):
                    try:
                        row = json.loads(line) if line.strip() else None
                    except ValueError:
                        self.report.note(f"history/{name} line {number}: not JSON; skipped")
                        continue
                    if isinstance(row, dict):
                        yield row
            elif name.endswith(".json"):
                fields = read_mail(path, self.report, f"history/{name}")
                if fields is not None:
                    yield fields

    def _acks(self) -> dict[str, set[str]]:
        folder = os.path.join(self.root, "acks")
        acks: dict[str, set[str]] = {}
        if not os.path.isdir(folder):
            return acks
        for name in sorted(os.listdir(folder)):
            agent, suffix = os.path.splitext(name)
            try:
                with open(os.path.join(folder, name), encoding="utf-8") as file:
                    text = file.read()
            except (OSError, UnicodeDecodeError):
                continue
            if suffix == ".json":
                try:
                    data = json.loads(text)
                except ValueError:
                    continue
                ids = data if isinstance(data, list) else list(data) if isinstance(
                    data, dict) else []
            else:
                ids = text.split()
            acks.setdefault(agent, set()).update(str(i) for i in ids)
        return acks


def _folders(root: str) -> list[str]:
    if not os.path.isdir(root):
        return []
    return sorted(n for n in os.listdir(root) if os.path.isdir(os.path.join(root, n))
                  and not os.path.islink(os.path.join(root, n)) and not n.startswith("."))
