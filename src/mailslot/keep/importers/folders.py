"""Folder mailboxes: Dead Drop style drops and repo-mailbox (coord) style inboxes.

dead-drop (github.com/forgeaura/deaddrop, ``lib/messages.js``): one flat folder
(``~/deaddrop``) of ``YYYY-MM-DD_HHmmss_<from>_to_<to>_<slug>.md`` files (a
``_<4 hex>`` suffix when two collide), each YAML frontmatter ``id`` (the file's stem),
``date``, ``from``, ``to`` (one name, or ``all``: a broadcast), ``subject``,
``re_issue``, ``read`` and ``read_at``, then the body; ``.config.json`` beside them
(:func:`dead_drop_settings`). ``read: true`` makes the recipient's copy read; Dead Drop
has no done state and no reply links.

repo-mailbox: one folder per repository (the agent is the repository's name, as
mailslot's own identity is): ``<root>/<repo>/inbox/`` and ``<root>/<repo>/archive/``
(also under ``<root>/<repo>/.mailbox/``), files in Markdown with frontmatter or JSON,
and a seen set (``.seen``, ``seen.txt`` or ``seen.json``: ids or file names, one a
line or a JSON list). In the inbox and seen: read; in the inbox, not seen: unread;
archived: done.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from typing import Any

from ...core.errors import InvalidInput
from ...core.message import State
from ..importing import Foreign, Report, Source
from .message_files import foreign, listing, read_mail, settings_file

_CONVERSATION = "_conversation_id"


def open_source(fmt: str, path: str, report: Report) -> Source:
    if not os.path.isdir(path):
        raise InvalidInput(f"{path} is not a folder")
    if fmt == "dead-drop":
        return DeadDrop(path, report)
    return RepoMailbox(path, report)


def _boxes(root: str) -> list[str]:
    return sorted(n for n in os.listdir(root) if not n.startswith(".")
                  and os.path.isdir(os.path.join(root, n))
                  and not os.path.islink(os.path.join(root, n)))


class DeadDrop(Source):
    def __init__(self, root: str, report: Report) -> None:
        super().__init__(report)
        self.root = root
        self.agents = dead_drop_settings(os.path.join(root, ".config.json"), report)

    def messages(self) -> Iterator[Foreign]:
        for name in listing(self.root):
            if not name.endswith(".md"):
                continue  # Dead Drop reads only its .md files
            fields = read_mail(os.path.join(self.root, name), self.report, name)
            if fields is None:
                continue
            stem = name[:-3]
            to = str(fields.get("to") or "all")  # Dead Drop's own default
            fields["to"] = to
            fields.setdefault("from", "unknown")
            read = fields.pop("read", False) is True
            if fields.pop("read_at", None) is not None:
                self.report.note("dead-drop read_at (when a message was read) is not "
                                 "kept: the message arrives read")
            item = foreign("dead-drop", stem, fields, owner=None, state=None)
            item.aliases.append(str(fields.get("id") or stem))
            if to.lower() == "all":
                item.broadcast = True
                if read:
                    self.report.note("dead-drop read flags of mail to all are not kept: "
                                     "Dead Drop keeps one flag for every reader")
            elif read:
                item.states = {to: "read"}
            yield item


def dead_drop_settings(path: str, report: Report) -> dict[str, dict[str, Any]]:
    """Dead Drop's ``.config.json`` as mailslot agent settings: each agent's
    ``wake_on_mail``, ``wake_method`` (Dead Drop's two, the app's own and
    ``unsupported``, are mailslot's by the same names) and ``conversation_id`` mean the
    same in mailslot; the top-level ``<host>_conversation_id`` of older Dead Drops woke
    that host's agent in that conversation, with the host's own wake method. Everything
    else is reported by name, one line each: a program's path (``..._path``) above
    all, since mailslot never runs a program another tool's file names."""
    data = settings_file(path, report, ".config.json")
    if not isinstance(data, dict):
        if data is not None:
            report.note(".config.json: not a JSON object; no agents taken from it")
        return {}
    found = data.get("agents")
    agents = {str(k): _agent(str(k), v, report) for k, v in found.items()} \
        if isinstance(found, dict) else {}
    for key, value in data.items():
        woken = _woken_in(key, value)
        if woken is not None:
            agents.setdefault(key.removesuffix(_CONVERSATION), {}).update(woken)
        elif key != "agents":
            report.note(_unmapped(key, value))
    return agents


def _woken_in(key: str, value: object) -> dict[str, Any] | None:
    """``<host>_conversation_id``: that host's agent woken in that conversation by the
    host's own wake method; ``None`` for any other key."""
    from ... import host_registry as hosts

    name = key.removesuffix(_CONVERSATION)
    if name == key or name not in hosts.NAMES or not isinstance(value, str) or not value:
        return None
    method = hosts.host(name).wake_method
    return None if method is None else {"wake_on_mail": True, "wake_method": method,
                                        "conversation_id": value}


def _agent(name: str, raw: object, report: Report) -> dict[str, Any]:
    """One agent's Dead Drop settings as mailslot's; the rest reported."""
    settings: dict[str, Any] = {}
    for key, value in (raw.items() if isinstance(raw, dict) else ()):
        if key not in _SAME or not _SAME[key](value):
            report.note(_unmapped(f"agents.{name}.{key}", value))
        elif value != "":  # Dead Drop's conversation_id "": none chosen yet
            settings[key] = value
    return settings


_SAME: dict[str, Callable[[object], bool]] = {
    "wake_on_mail": lambda value: isinstance(value, bool),
    "wake_method": lambda value: _known_method(value),
    "conversation_id": lambda value: isinstance(value, str)}
"""Dead Drop's agent settings that mean the same in mailslot, and the values taken."""


def _known_method(value: object) -> bool:
    from ...wake.methods_by_name import find_method

    return isinstance(value, str) and find_method(value) is not None


def _unmapped(key: str, value: object) -> str:
    if key.endswith("_path"):
        return (f".config.json: {key} not taken (mailslot never runs a program another "
                "tool's file names; it finds the program itself, and a wake method's "
                "`executable` names another)")
    shown = json.dumps(value)[:60]
    return f".config.json: {key} = {shown} has no mailslot setting; not taken"


class RepoMailbox(Source):
    def __init__(self, root: str, report: Report) -> None:
        super().__init__(report)
        self.root = root

    def messages(self) -> Iterator[Foreign]:
        for repo in _boxes(self.root):
            base = os.path.join(self.root, repo)
            if os.path.isdir(os.path.join(base, ".mailbox")):
                base = os.path.join(base, ".mailbox")
            seen = _seen(base)
            for sub in ("inbox", "archive"):
                folder = os.path.join(base, sub)
                for name in listing(folder):
                    shown = os.path.join(repo, sub, name)
                    fields = read_mail(os.path.join(folder, name), self.report, shown)
                    if fields is None:
                        continue
                    stem = os.path.splitext(name)[0]
                    key = str(fields.get("id") or f"{repo}/{stem}")
                    state: State = "done" if sub == "archive" else \
                        "read" if seen & {key, name, stem} else "unread"
                    item = foreign("repo-mailbox", key, fields, owner=repo, state=state)
                    item.aliases.append(stem)
                    yield item


def _seen(base: str) -> set[str]:
    for name in (".seen", "seen.txt", "seen.json", ".seen.json"):
        path = os.path.join(base, name)
        try:
            with open(path, encoding="utf-8") as file:
                text = file.read()
        except (OSError, UnicodeDecodeError):
            continue
        if name.endswith(".json"):
            try:
                data = json.loads(text)
            except ValueError:
                return set()
            return {str(i) for i in (data if isinstance(data, list) else data.get("seen", []))}
        return {line.strip() for line in text.splitlines() if line.strip()}
    return set()
