"""letterbox (PyPI ``letterbox``): ``<state_dir>/channels/<channel>/msg-*.json``, one JSON
message a file, and ``.read/<agent>.json`` holding each agent's read high-water mark.

Mapping: ``sender``/``recipient`` as they are (a message without a recipient goes to
the channel's other agents); ``timestamp`` is the date; the body's first line (cut to
80 characters) is the subject, since letterbox has none; ``in_reply_to`` maps; a
channel is a thread (its first message starts it); a message at or below the
recipient's high-water mark is ``read``. Not mapped: ``instance_id``, ``address``,
``metadata`` (reported when set).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

from ...core.errors import InvalidInput
from ..importing import Foreign, Report, Source
from .message_files import read_source, subject_of


def open_source(fmt: str, path: str, report: Report) -> Source:
    channels = os.path.join(path, "channels")
    if not os.path.isdir(channels):
        raise InvalidInput(f"{path} is not a letterbox state folder (no channels/ in it)")
    return Channels(channels, report)


class Channels(Source):
    def __init__(self, root: str, report: Report) -> None:
        super().__init__(report)
        self.root = root

    def messages(self) -> Iterator[Foreign]:
        for channel in sorted(os.listdir(self.root)):
            folder = os.path.join(self.root, channel)
            if os.path.isdir(folder) and not os.path.islink(folder):
                yield from self._channel(channel, folder)

    def _channel(self, channel: str, folder: str) -> Iterator[Foreign]:

        marks = _marks(os.path.join(folder, ".read"))
        rows: list[dict[str, Any]] = []
        for name in sorted(os.listdir(folder)):
            if not (name.startswith("msg-") and name.endswith(".json")):
                continue
            data = read_source(os.path.join(folder, name), self.report, f"{channel}/{name}")
            if data is None:
                continue
            try:
                row = json.loads(data)
                if not isinstance(row, dict):
                    raise ValueError("not an object")
            except ValueError as exc:
                self.report.note(f"{channel}/{name}: unreadable ({exc}); not imported")
                continue
            row["_stem"] = name[:-5]
            rows.append(row)
        people = sorted({str(r.get("sender")) for r in rows}
                        | {str(r["recipient"]) for r in rows if r.get("recipient")})
        first = f"{channel}/{rows[0]['_stem']}" if rows else None
        for row in rows:
            sender = str(row.get("sender") or "")
            to = [str(row["recipient"])] if row.get("recipient") else \
                [p for p in people if p != sender]
            stem = row["_stem"]
            states = {r: "read" for r in to if marks.get(r, "") >= stem}
            reply = row.get("in_reply_to")
            extra = {"instance_id": row.get("instance_id"),
                     "metadata": {k: v for k, v in (row.get("metadata") or {}).items() if v}}
            yield Foreign(key=f"{channel}/{stem}", sender=sender, to=to,
                          subject=subject_of(str(row.get("body") or "")),
                          body=str(row.get("body") or ""), date=row.get("timestamp"),
                          states=states,  # type: ignore[arg-type]
                          in_reply_to=f"{channel}/{reply}" if reply else None,
                          thread=first if f"{channel}/{stem}" != first else None,
                          extra=extra)


def _marks(folder: str) -> dict[str, str]:
    """Each agent's read high-water mark (a message file's stem)."""
    marks: dict[str, str] = {}
    if not os.path.isdir(folder):
        return marks
    for name in os.listdir(folder):
        if name.endswith(".json"):
            try:
                with open(os.path.join(folder, name), encoding="utf-8") as file:
                    mark = json.load(file).get("high_water_mark")
            except (OSError, ValueError, AttributeError):
                continue
            if isinstance(mark, str):
                marks[name[:-5]] = mark
    return marks
