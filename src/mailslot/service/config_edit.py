"""Changing the config from the command line (``mailslot config``), on any store.

The config is one JSON object: ``config.json`` in a mailbox folder, one row in
PostgreSQL. Every change is one read-modify-write through ``Store.update_config`` (under
the store's config lock, or in one transaction), so nothing changes between the read and
the write, and it is saved whole or not at all. Before it is saved the result is checked
as ``doctor`` and ``watch --validate`` check a config: a change that adds a problem is
refused with that problem and nothing is written (problems already there do not block an
unrelated change, so a broken config can be fixed one key at a time).

Every read names the config's *version* (a hash of it as stored). A change given the
version it was based on (``expected``) is refused as a conflict when the config moved
since: another ``config set``, the web page, ``install --wake``, an editor.

A key is a dotted path into nested objects (``agents.reviewer.wake_on_mail``). A value is
JSON when it parses as JSON (``true``, ``30``, ``["a", "b"]``, ``{"x": 1}``,
``"text"``), and otherwise the text itself (``tmux``). Several keys set in one change are
checked together, so keys that need each other (``wake_method`` and its fields) are set
in one command; a change refused for want of such a key says how.

Who may change what: :data:`OWNER_ONLY` settings only the owner, or a process with no
identity at all (:meth:`Mailbox.require_owner`), on every store; a PostgreSQL agent role
may change no setting at all (the database refuses).
"""

from __future__ import annotations

import copy
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..core.config import Config
from ..core.durable import CREATE, open_file
from ..core.errors import InvalidInput, NotFound, Refused
from ..store import Store
from ..wake.methods_by_name import find_method
from ..wake.report import validate_config
from .mailbox import Mailbox
from .settings import version

OWNER_ONLY = ("owner", "require_credentials", "governor", "alerts")
"""Settings only the owner (or a process with no identity) changes: who the owner is,
whether writing needs a credential, the loop governor (its limits and the pause), and
the alerts the owner gets. An agent that could change them could lift its own pause or
limits, or make itself the owner."""
KeyPath = list[str]
"""A key as its parts (``["agents", "bob", "wake_method"]``)."""


def parse_value(text: str) -> object:
    """The value ``config set KEY TEXT`` stores: JSON if ``TEXT`` parses, else the text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _path(key: str) -> list[str]:
    parts = key.split(".")
    if not key or any(not p.strip() for p in parts):
        raise InvalidInput(f"{key!r} is not a config key: a dotted path such as "
                           "agents.reviewer.wake_on_mail")
    return parts


def current(store: Store) -> tuple[dict[str, Any], str]:
    """The whole config as stored, and its version."""
    raw = store.load_config()
    return raw, version(raw)


def get(store: Store, key: str) -> tuple[object, str]:
    """The value at ``key``, and the config's version; ``NotFound`` if it is not set."""
    raw, seen = current(store)
    node: object = raw
    for part in _path(key):
        if not isinstance(node, dict) or part not in node:
            raise NotFound(f"{key} is not set in the config")
        node = node[part]
    return node, seen


def set_values(box: Mailbox, pairs: Sequence[tuple[str, object]], *,
               expected: str | None = None) -> str:
    """Set every ``(key, value)`` of ``pairs`` (objects on the way are created), checked
    together as one change; return the new version."""
    return _set(box, [(_path(key), value) for key, value in pairs], expected)


def merge(box: Mailbox, text: str, *, expected: str | None = None) -> tuple[str, list[str]]:
    """Set every value of the JSON object ``text`` at its path (``{"agents": {"bob":
    {"wake_method": "tmux"}}}`` sets ``agents.bob.wake_method``; other keys are kept), as
    one change; return the new version and the keys set."""
    try:
        given = json.loads(text)
    except ValueError as exc:
        raise InvalidInput(f"the settings to merge are not valid JSON ({exc}); nothing was "
                           "changed") from None
    if not isinstance(given, dict) or not given:
        raise InvalidInput("the settings to merge must be a JSON object with at least one "
                           'key, such as {"agents": {"bob": {"wake_on_mail": true}}}; '
                           "nothing was changed")
    pairs = list(_leaves(given, []))
    return _set(box, pairs, expected), [".".join(parts) for parts, _ in pairs]


def _leaves(node: dict[str, Any], above: KeyPath) -> Iterator[tuple[KeyPath, object]]:
    """Each value of a nested object with its path (an empty object is a value)."""
    for key, value in node.items():
        if isinstance(value, dict) and value:
            yield from _leaves(value, [*above, key])
        else:
            yield [*above, key], value


def _set(box: Mailbox, pairs: list[tuple[KeyPath, object]], expected: str | None) -> str:
    def edit(raw: dict[str, Any]) -> None:
        for parts, value in pairs:
            node = raw
            for depth, part in enumerate(parts[:-1]):
                child = node.setdefault(part, {})
                if not isinstance(child, dict):
                    raise InvalidInput(f"{'.'.join(parts[:depth + 1])} is not an object, "
                                       f"so {'.'.join(parts)} cannot be set; nothing was "
                                       "changed")
                node = child
            node[parts[-1]] = value

    return _change(box, edit, expected, lambda raw, problem: _together(raw, pairs, problem))


def _together(raw: dict[str, Any], pairs: list[tuple[KeyPath, object]], problem: str) -> str:
    """How to set what ``problem`` finds missing in the same command as ``pairs``
    (``""``: it names no other key): every key given, then the key it names and the
    other fields the agent's wake method requires that are not set."""
    named = _named_key(problem)
    given = [".".join(parts) for parts, _ in pairs]
    if named is None or any(named == k or named.startswith(k + ".")
                            or k.startswith(named + ".") for k in given):
        return ""
    wanted = [named]
    parts = named.split(".")
    if len(parts) == 3 and parts[0] == "agents":  # and the rest its wake method needs
        agents = raw.get("agents")
        entry = agents.get(parts[1]) if isinstance(agents, dict) else None
        entry = entry if isinstance(entry, dict) else {}
        method = find_method(str(entry.get("wake_method", "")))
        for spec in method.fields if method is not None else ():
            key = f"agents.{parts[1]}.{spec.name}"
            if spec.required and spec.name not in entry and key not in wanted:
                wanted.append(key)
    words = [f"{key} {_shown(value)}" for key, (_, value) in zip(given, pairs, strict=True)]
    words += [f"{key} {key.rsplit('.', 1)[-1].upper()}" for key in wanted]
    return f"; set them together: mailslot config set {' '.join(words)}"


def _named_key(problem: str) -> str | None:
    """The key a ``config.json: KEY ...`` problem is about."""
    head = "config.json: "
    if not problem.startswith(head):
        return None
    key = problem[len(head):].split(" ", 1)[0].rstrip(":;,")
    return key or None


def _shown(value: object) -> str:
    """``value`` as ``config set`` takes it on a shell's command line."""
    import shlex

    return shlex.quote(value if isinstance(value, str) else json.dumps(value))


def unset(box: Mailbox, key: str, *, expected: str | None = None) -> str:
    """Remove ``key`` (``NotFound`` if it is not set); return the new version."""
    parts = _path(key)

    def edit(raw: dict[str, Any]) -> None:
        node: object = raw
        for part in parts[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict) or parts[-1] not in node:
            raise NotFound(f"{key} is not set in the config; nothing was changed")
        del node[parts[-1]]

    return _change(box, edit, expected)


def replace(box: Mailbox, text: str, *, expected: str | None = None) -> str:
    """Replace the whole config with the JSON object ``text`` (``config import``)."""
    try:
        new = json.loads(text)
    except ValueError as exc:
        raise InvalidInput(f"the config to import is not valid JSON ({exc}); nothing was "
                           "changed") from None
    if not isinstance(new, dict):
        raise InvalidInput("the config to import must be a JSON object; nothing was changed")

    def edit(raw: dict[str, Any]) -> None:
        raw.clear()
        raw.update(new)

    return _change(box, edit, expected)


def problems(store: Store, raw: dict[str, Any]) -> list[str]:
    """What ``doctor`` and ``watch --validate`` would report about ``raw``."""
    report = validate_config(store, raw)
    found = [*Config(raw).problems(), *report.problems]
    found += [p if f"agents.{a.agent}" in p else f"agents.{a.agent}: {p}"
              for a in report.agents for p in a.problems]
    return list(dict.fromkeys(found))


def _change(box: Mailbox, edit: Callable[[dict[str, Any]], None], expected: str | None,
            how: Callable[[dict[str, Any], str], str] | None = None) -> str:
    """Apply ``edit`` to a copy under the store's config lock; save it only if the config
    is still at ``expected`` (when given), it changed anything, it changes no
    :data:`OWNER_ONLY` setting unless ``box`` is the owner's, and it adds no problem
    (``how``: what to add to the refusal, given the copy and the problem)."""
    outcome: dict[str, str] = {}
    store = box.store

    def change(raw: dict[str, Any]) -> bool:
        seen = version(raw)
        if expected is not None and expected != seen:
            raise Refused(f"the config changed since version {expected} (it is now {seen}); "
                          "nothing was changed: look again (mailslot config show) and "
                          "retry")
        candidate = copy.deepcopy(raw)
        edit(candidate)
        outcome["version"] = version(candidate)
        if candidate == raw:
            return False
        owners = [k for k in OWNER_ONLY if raw.get(k, _UNSET) != candidate.get(k, _UNSET)]
        if owners:
            box.require_owner(f"change {' or '.join(owners)} in the config")
        before = set(problems(store, raw))
        added = [p for p in problems(store, candidate) if p not in before]
        if added:
            said = how(candidate, added[0]) if how is not None else ""
            raise InvalidInput(f"{added[0]}; nothing was changed{said}")
        raw.clear()
        raw.update(candidate)
        return True

    store.update_config(change)
    return outcome["version"]


_UNSET = object()


def as_text(config: dict[str, Any]) -> str:
    """The config as ``show`` and ``export`` write it (the layout of config.json)."""
    return json.dumps(config, indent=2, ensure_ascii=False) + "\n"


def export_to(store: Store, path: str) -> str:
    """Write the whole config to a new file ``path`` (0600: it may name secrets' files
    and the owner's choices; an existing file is never overwritten); return its version."""
    raw, seen = current(store)
    try:
        fd = open_file(path, CREATE)
    except FileExistsError:
        raise InvalidInput(f"{path} already exists; nothing was written") from None
    except OSError as exc:
        raise InvalidInput(f"cannot write {path}: {exc.strerror}") from None
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(as_text(raw))
    return seen


def import_from(box: Mailbox, path: str, *, expected: str | None = None) -> str:
    """Replace the whole config with the JSON object in file ``path`` (``-``: stdin)."""
    try:
        if path == "-":
            text = sys.stdin.read(_MAX_CONFIG_BYTES + 1)
        else:
            with open(path, encoding="utf-8") as src:
                text = src.read(_MAX_CONFIG_BYTES + 1)
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}"
                           ) from None
    if len(text) > _MAX_CONFIG_BYTES:
        raise InvalidInput(f"{path} is larger than a config can be "
                           f"({_MAX_CONFIG_BYTES // 1024 // 1024} MiB); nothing was changed")
    return replace(box, text, expected=expected)


_MAX_CONFIG_BYTES = 4 * 1024 * 1024
"""A config is a few kilobytes; a file far past that is the wrong file."""
