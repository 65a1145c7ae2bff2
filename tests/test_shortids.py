"""Short ids: a unique prefix (6+ characters) or the random tail names a whole id."""

from __future__ import annotations

import pytest

from mailslot.core.errors import InvalidInput, NotFound
from mailslot.core.shortids import resolve, short_forms, tail

A = "2026-09-21_144808.123456_claude_to_gemini_hi_7f3a9c"
B = "2026-09-21_144809.000001_claude_to_gemini_hi_81be02"
C = "2026-09-22_090000.000000_codex_to_gemini_hi_7f3a9c"  # same tail as A


def test_a_whole_id_is_taken_as_is_without_listing() -> None:
    def never() -> list[str]:
        raise AssertionError("listed")

    assert resolve(A, iter(never, None)) == A


def test_a_unique_prefix_or_tail_names_the_id() -> None:
    assert resolve("2026-09-21_144809", [A, B, C]) == B
    assert resolve("81be02", [A, B, C]) == B


def test_an_ambiguous_short_form_is_refused_with_the_candidates() -> None:
    with pytest.raises(InvalidInput) as caught:
        resolve("7f3a9c", [A, B, C])
    assert A in str(caught.value) and C in str(caught.value) and B not in str(caught.value)
    with pytest.raises(InvalidInput, match="ambiguous"):
        resolve("2026-09-21", [A, B, C])


def test_too_short_or_path_like_or_unknown() -> None:
    for bad in ("7f3a", "../../etc", "a/b/c/d/e", f"{A}.md", ""):
        with pytest.raises(InvalidInput):
            resolve(bad, [A, B])
    with pytest.raises(NotFound, match="no message '999999' for gemini"):
        resolve("999999", [A, B], owner="gemini")


def test_short_forms_round_trip() -> None:
    ids = [A, B, C]
    forms = short_forms(ids, ids)
    assert forms == {A: A, B: tail(B), C: C}
    for full, short in forms.items():
        assert resolve(short, ids) == full


def test_short_forms_among_many_ids_of_both_shapes() -> None:
    """A full inbox: the tail is shown only where no other id shares it, whatever the
    shape (eight hex characters, or six after an older id's slug)."""
    new = [f"2026-09-21_1448{n:02d}.000000_claude_to_gemini_{n:08x}" for n in range(60)]
    old = [f"2026-09-20_0900{n:02d}.000000_codex_to_gemini_hi_{n:06x}" for n in range(60)]
    twin = "2026-09-22_100000.000000_qwen_to_gemini_00000007"  # the tail of new[7]
    among = [*new, *old, twin]
    page = [new[7], new[8], old[3], twin, new[59]]
    forms = short_forms(page, among)
    assert forms == {new[7]: new[7], new[8]: "00000008", old[3]: "000003", twin: twin,
                     new[59]: "0000003b"}
    for full, short in forms.items():
        assert resolve(short, among) == full


def test_an_id_listed_more_than_once_is_still_its_tail() -> None:
    """A message to several mailboxes, or one the caller also sent, comes once per
    listing: it is one id, and its tail names it."""
    forms = short_forms([B, A], [A, B, B, B, A])
    assert forms == {A: tail(A), B: tail(B)}
    assert short_forms([A], [A, C, A]) == {A: A}  # another id shares the tail: whole
