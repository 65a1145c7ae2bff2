"""Message ids: shape, order, uniqueness, and that nothing path-like passes as one."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mailslot.core import ids
from mailslot.core.errors import InvalidInput
from mailslot.core.ids import (
    MAX_ID_LENGTH,
    check_id,
    ids_of_files,
    is_id,
    new_id,
    reference,
    sender_of,
    shown,
)

WHEN = datetime(2026, 9, 21, 16, 48, 8, 123456, tzinfo=timezone(timedelta(hours=2)))


def test_new_id_reads_like_the_design_example_and_carries_no_subject() -> None:
    mid = new_id(WHEN, "claude", ["gemini"])
    assert re.fullmatch(r"2026-09-21_144808\.123456_claude_to_gemini_[0-9a-f]{8}", mid)
    assert is_id(mid) and check_id(mid) == mid
    assert sender_of(mid) == "claude"


def test_older_ids_with_a_subject_slug_still_parse_and_notices_drop_the_slug() -> None:
    old = "2026-09-21_144808.123456_claude_to_gemini_urgent-run-curl-sh_7f3a9c"
    assert is_id(old) and sender_of(old) == "claude"
    assert is_id("2026-09-21_144808.123456_a_to_b__7f3a9c")  # an empty slug, as before
    assert reference(old) == "2026-09-21_144808.123456_claude_to_gemini_7f3a9c"
    new = new_id(WHEN, "claude", ["gemini"])
    assert reference(new) == new


def test_new_id_is_written_in_utc_whatever_the_offset() -> None:
    assert new_id(WHEN.astimezone(UTC), "a", ["b"])[:24] == new_id(WHEN, "a", ["b"])[:24]


def test_ids_sort_by_time() -> None:
    ids = [new_id(WHEN + timedelta(microseconds=n * 7919), "zed", ["a"]) for n in range(50)]
    assert sorted(ids) == ids


def test_ids_from_the_same_instant_still_differ() -> None:
    assert len({new_id(WHEN, "a", ["b"]) for _ in range(200)}) == 200


def test_several_recipients_name_the_first_and_a_count() -> None:
    mid = new_id(WHEN, "claude", ["gemini", "codex", "sarah"])
    assert "_claude_to_gemini+2_" in mid and is_id(mid)


def test_longest_names_stay_within_the_limit() -> None:
    mid = new_id(WHEN, "s" * 64, ["r" * 64, "q"])
    assert len(mid) <= MAX_ID_LENGTH and is_id(mid)


@pytest.mark.parametrize(
    "raw",
    [
        "x",
        "../2026-09-21_144808.123456_a_to_b_s_abcdef",
        "2026-09-21_144808.123456_a_to_b_s_abcdef/..",
        "2026-09-21_144808.123456_a_to_b_s/../x_abcdef",
        "2026-09-21_144808.123456_a_to_b_..._abcdef",
        "2026-09-21_144808.123456_a_to_b_s_abcdef.md",
        "2026-09-21_144808.123456_a_to_b_s_abcdef\n",
        "2026-09-21_144808.123456_A_to_b_s_abcdef",
        "2026-09-21_144808.123456_a_b_to_c_s_abcdef",
        "2026-09-21_144808.123456_a_to_b_s_abcdeg",
        "٢٠٢٦-09-21_144808.123456_a_to_b_s_abcdef",  # digits of another script
        "2026-09-21_144808.123456_a_to_b_" + "s" * 200 + "_abcdef",
    ],
)
def test_malformed_ids_are_refused(raw: str) -> None:
    assert not is_id(raw)
    with pytest.raises(InvalidInput, match="is not a message id"):
        check_id(raw)


@pytest.mark.parametrize("raw", ["", None, 7])
def test_empty_id_is_refused(raw: object) -> None:
    with pytest.raises(InvalidInput, match="empty"):
        check_id(raw)


def test_ids_of_files_skips_strays_and_agrees_with_is_id() -> None:
    good = new_id(WHEN, "a", ["b"])
    names = [f"{good}.md", good, "README.md", f"{good}.md.tmp", ".md", "x.md",
             "2026-09-21_144808.123456_a_to_b_" + "s" * 200 + "_abcdef.md"]
    assert ids_of_files(names) == [good]
    assert ids_of_files(names) == [n[:-3] for n in names if n.endswith(".md") and is_id(n[:-3])]


_HEAD = (r"\d{4}-\d{2}-\d{2}_\d{6}\.\d{6}_[a-z0-9-]+(?:@[a-z0-9-]+)?"
         r"_to_[a-z0-9+-]+(?:@[a-z0-9+-]+)?")
_SLUGGED = re.compile(f"({_HEAD})_[a-z0-9-]*(_[0-9a-f]{{6}})", re.ASCII)
_ANY_ID = re.compile(_HEAD + r"(?:_[0-9a-f]{8}|_[a-z0-9-]*_[0-9a-f]{6})", re.ASCII)
_SHAPES = ["2026-09-21_144808.123456_claude_to_gemini_7f3a9c2e",
           "2026-09-21_144808.123456_claude_to_gemini+2_urgent-fix_7f3a9c",
           "2026-09-21_144808.123456_a_to_b__7f3a9c",
           "2026-09-21_144808.123456_codex@b_to_claude+1_7f3a9c2e",  # across nodes
           "2026-09-21_144808.123456_claude_to_codex@b_7f3a9c2e"]


@st.composite
def _near_ids(draw: st.DrawFn) -> str:
    """An id of either shape with a few characters changed, added or removed."""
    chars = list(draw(st.sampled_from(_SHAPES)))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(chars) - 1))
        what = draw(st.sampled_from("09af_-.+@xZ\n\u0663 "))
        how = draw(st.integers(0, 2))
        if how == 0:
            chars[at] = what
        elif how == 1:
            chars.insert(at, what)
        elif len(chars) > 1:
            del chars[at]
    return "".join(chars)


@given(_near_ids())
def test_ids_and_their_named_forms_follow_the_documented_pattern(raw: str) -> None:
    """Ids are read with string methods (a compile costs every hook's start), and long
    listings with the compiled pattern; both, and the forms notices and framed mail name
    ids by, follow the documented pattern."""
    assert is_id(raw) == bool(len(raw) <= MAX_ID_LENGTH and _ANY_ID.fullmatch(raw))
    assert ids_of_files([f"{raw}.md", "README.md"]) == ([raw] if is_id(raw) else [])
    long = [f"{raw}.md"] * ids._MANY  # a long listing is matched the other way
    assert ids_of_files(long) == ([raw] * ids._MANY if is_id(raw) else [])
    slugged = _SLUGGED.fullmatch(raw)
    assert reference(raw) == (slugged.group(1) + slugged.group(2) if slugged else raw)
    assert shown(raw) == (slugged.group(2)[1:] if slugged else raw)
