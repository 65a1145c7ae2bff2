"""mailslot.core.jsontext reads and writes JSON exactly as the json module does.

Hooks, the file store and the host modules read hosts' input, session records, wake
records and config.json with it, so any difference (a value, an error, a byte of output)
would be a difference a host or a file sees.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mailslot.core import jsontext

VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner), max_leaves=20)


def outcome(read: object, document: str | bytes) -> tuple[object, str]:
    """What reading gives: the value (as canonical JSON) or the error's type and text."""
    try:
        return "value", json.dumps(read(document))  # type: ignore[operator]
    except (ValueError, RecursionError) as exc:
        return type(exc), str(exc)


@settings(max_examples=400)
@given(VALUES, st.booleans(), st.booleans())
def test_writes_what_json_writes(value: object, ascii: bool, compact: bool) -> None:
    separators = (",", ":") if compact else None
    assert jsontext.dumps(value, ascii=ascii, compact=compact) == json.dumps(
        value, ensure_ascii=ascii, separators=separators)


@settings(max_examples=400)
@given(VALUES, st.sampled_from(["", " ", "\n\t ", "\r\n"]))
def test_reads_what_json_reads(value: object, space: str) -> None:
    document = space + json.dumps(value) + space
    assert outcome(jsontext.loads, document) == outcome(json.loads, document)
    raw = document.encode("utf-8")
    assert outcome(jsontext.loads, raw) == outcome(json.loads, raw)


@settings(max_examples=400)
@given(st.text() | st.binary())
def test_anything_else_fails_as_json_fails(document: str | bytes) -> None:
    assert outcome(jsontext.loads, document) == outcome(json.loads, document)


@pytest.mark.parametrize("document", [
    '{"a": 1} x', "[1,2", "", "   ", "\ufeff{}", b'\xef\xbb\xbf{"a": 1}', '{"a": NaN}',
    "1 2", '"text"', b'{"a": "\xc3\xa9"}', b"\xed\xa0\x80", b'"\xff"', "[" * 100_000,
    '{"a": -Infinity, "b": 1e400}', '"\\ud800"', "tru", "[1,]",
])
def test_edge_cases_read_as_json_reads_them(document: str | bytes) -> None:
    assert outcome(jsontext.loads, document) == outcome(json.loads, document)


def test_what_json_cannot_write_is_refused_alike() -> None:
    loop: list[object] = []
    loop.append(loop)
    for value in (loop, {"when": object()}, {(1, 2): "tuple key"}):
        with pytest.raises((TypeError, ValueError)) as ours:
            jsontext.dumps(value)
        with pytest.raises((TypeError, ValueError)) as theirs:
            json.dumps(value)
        assert (type(ours.value), str(ours.value)) == (type(theirs.value), str(theirs.value))
