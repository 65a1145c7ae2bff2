"""The entries an install set in a settings document, and taking exactly those out again.

``install`` records, per file, each value it set, changed or removed (its path of keys,
with the value before and after) and each object it created. When the file has changed
since (you edited it), ``install --undo`` cannot put the old bytes back without losing
your edit, so it takes out only these: a value still as install set it goes back to
what it was; a list (hook handlers) loses only mailslot's own handlers that install
added; an object install created goes when nothing is left in it, and a ``mailslot``
entry it created (the MCP server) goes whole. What you changed stays as you left it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

from ...host_registry.host import SERVER
from . import entries

Op = dict[str, Any]
"""``{"path": [key, ...], "before": value, "after": value}``; no ``before`` (``after``):
the key was not there before (is not there after)."""
_GONE = object()


def set_entries(before: Mapping[str, Any], after: Mapping[str, Any]
                ) -> tuple[list[Op], list[list[str]]]:
    """What turned ``before`` into ``after``: the values set, changed and removed, and
    the objects created (outermost first)."""
    ops: list[Op] = []
    created: list[list[str]] = []

    def walk(old: Mapping[str, Any], new: Mapping[str, Any], at: list[str]) -> None:
        for key, value in new.items():
            was = old.get(key, _GONE)
            if was == value:
                continue
            if isinstance(value, Mapping) and (was is _GONE or isinstance(was, Mapping)):
                if was is _GONE:
                    created.append([*at, key])
                walk(was if isinstance(was, Mapping) else {}, value, [*at, key])
            else:
                ops.append(_op([*at, key], was, value))
        ops.extend(_op([*at, key], was, _GONE) for key, was in old.items() if key not in new)

    walk(before, after, [])
    return ops, created


def _op(path: list[str], before: object, after: object) -> Op:
    op: Op = {"path": path}
    if before is not _GONE:
        op["before"] = before
    if after is not _GONE:
        op["after"] = after
    return op


def flat_changes(before: Mapping[str, Any], after: Mapping[str, Any],
                 leave: Sequence[str] = ()) -> list[Op]:
    """As :func:`set_entries` for one object's own keys only (but ``leave``)."""
    keys = [k for k in dict.fromkeys([*before, *after]) if k not in leave]
    return [_op([k], before.get(k, _GONE), after.get(k, _GONE)) for k in keys
            if before.get(k, _GONE) != after.get(k, _GONE)]


def merged(earlier: Sequence[Op], later: Sequence[Op]) -> list[Op]:
    """One record of two runs: a value keeps what it held before the first run (when
    the second found it as the first left it) and what the last run set."""
    out = {json.dumps(op["path"]): dict(op) for op in earlier}
    for op in later:
        key = json.dumps(op["path"])
        first = out.get(key)
        if first is not None and first.get("after", _GONE) == op.get("before", _GONE):
            op = _op(op["path"], first.get("before", _GONE), op.get("after", _GONE))
        out[key] = op
    return [op for op in out.values() if op.get("before", _GONE) != op.get("after", _GONE)]


def take_out(doc: MutableMapping[str, Any], ops: Sequence[Op],
             created: Sequence[Sequence[str]]) -> None:
    """Take what install set out of ``doc`` (a JSON object or a TOML document), leaving
    what was changed since as it is (see the module)."""
    for op in ops:
        holder = _at(doc, op["path"][:-1])
        key = op["path"][-1]
        if holder is None:
            continue
        now = _plain(holder[key]) if key in holder else _GONE
        before, after = op.get("before", _GONE), op.get("after", _GONE)
        if now == after:
            _put(holder, key, before)
        elif isinstance(now, list) and isinstance(after, list):
            theirs = before if isinstance(before, list) else []
            kept = [item if item in theirs else entries.without_ours(item) for item in now]
            left = [item for item in kept if item is not None]
            if left != now:
                _put(holder, key, left if left or before is not _GONE else _GONE)
    for path in sorted(created, key=len, reverse=True):
        holder = _at(doc, path[:-1])
        inner = holder.get(path[-1]) if holder is not None else None
        if holder is not None and isinstance(inner, Mapping) \
                and (not inner or path[-1] == SERVER):
            del holder[path[-1]]


def _at(doc: MutableMapping[str, Any], path: Sequence[str]) -> MutableMapping[str, Any] | None:
    for key in path:
        inner = doc.get(key)
        if not isinstance(inner, MutableMapping):
            return None
        doc = inner
    return doc


def _put(holder: MutableMapping[str, Any], key: str, value: object) -> None:
    if value is _GONE:
        holder.pop(key, None)
    else:
        holder[key] = value


def _plain(value: Any) -> Any:
    """A TOML item as the plain value it holds (a JSON value is one already)."""
    unwrap = getattr(value, "unwrap", None)
    return unwrap() if callable(unwrap) else value
