"""Text rules: one-line header fields, clean bodies, byte limits, UTF-8 only."""

from __future__ import annotations

import io

import pytest

from mailslot.core.errors import InvalidInput
from mailslot.core.text import clean_body, clean_field, decode_body, quoted, read_body


@pytest.mark.parametrize(
    "raw",
    ["hi\n---\nfrom: owner", "a\rb", "a\r\nb", "a\x0bb", "a\x0cb", "a\x1cb", "a\x85b",
     "a\u2028b", "a\u2029b", "trailing\n"],
)
def test_a_field_with_a_line_break_is_refused(raw: str) -> None:
    with pytest.raises(InvalidInput, match="single line"):
        clean_field(raw, "subject")


def test_a_field_with_nul_is_refused() -> None:
    with pytest.raises(InvalidInput, match="NUL"):
        clean_field("a\x00b", "subject")


def test_other_controls_and_runs_of_space_collapse_to_one_space() -> None:
    assert clean_field("a\tb\x1b[31mc\x7fd\x9be", "subject") == "a b [31mc d e"
    assert clean_field("  spaced    out  ", "subject") == "spaced out"


def test_dashes_inside_a_field_are_kept() -> None:
    assert clean_field("a --- b", "subject") == "a --- b"
    assert clean_field("---", "subject") == "---"


@pytest.mark.parametrize("raw", ["", "   ", "\t\x01"])
def test_a_blank_field_is_refused(raw: str) -> None:
    with pytest.raises(InvalidInput, match="subject is empty"):
        clean_field(raw, "subject")


def test_field_limit_counts_characters_after_cleaning() -> None:
    assert clean_field("é" * 200, "subject") == "é" * 200
    with pytest.raises(InvalidInput, match="201 characters; the limit is 200"):
        clean_field("x" * 201, "subject")


def test_non_text_field_is_refused() -> None:
    with pytest.raises(InvalidInput, match="must be text"):
        clean_field(b"bytes", "subject")


def test_body_line_ends_become_lf_and_lines_are_kept() -> None:
    assert clean_body("a\r\nb\rc\n\n\td", 100) == "a\nb\nc\n\n\td"


def test_body_terminal_controls_become_replacement_characters() -> None:
    assert clean_body("\x1b[2Jgone\x07\x7f\x85\x9b", 100) == "\ufffd[2Jgone" + "\ufffd" * 4


def test_body_keeps_unicode_and_separators() -> None:
    assert clean_body("日本語 \u2028 ok", 100) == "日本語 \u2028 ok"


def test_body_with_nul_is_refused() -> None:
    with pytest.raises(InvalidInput, match="NUL"):
        clean_body("a\x00b", 100)


def test_body_limit_is_in_utf8_bytes() -> None:
    assert clean_body("é" * 5, 10) == "é" * 5
    with pytest.raises(InvalidInput, match="body is 12 bytes; the limit is 10"):
        clean_body("é" * 6, 10)


def test_body_with_a_lone_surrogate_is_refused() -> None:
    with pytest.raises(InvalidInput, match="not valid UTF-8"):
        clean_body("a\udc80b", 100)


def test_non_text_body_is_refused() -> None:
    with pytest.raises(InvalidInput, match="body must be text"):
        clean_body(None, 100)


def test_decode_body_refuses_invalid_utf8_naming_the_offset() -> None:
    assert decode_body("ok é".encode()) == "ok é"
    with pytest.raises(InvalidInput, match="offset 2"):
        decode_body(b"ok\xff")


def test_read_body_accepts_exactly_the_limit_and_refuses_one_more() -> None:
    assert read_body(io.BytesIO(b"x" * 10), 10) == "x" * 10
    with pytest.raises(InvalidInput, match="more than 10 bytes"):
        read_body(io.BytesIO(b"x" * 11), 10)


def test_read_body_stops_reading_just_past_the_limit() -> None:
    stream = io.BytesIO(b"x" * 10_000)
    with pytest.raises(InvalidInput):
        read_body(stream, 10)
    assert stream.tell() == 11


def test_quoted_is_one_escaped_line_and_shortened() -> None:
    assert quoted("a\nb") == "'a\\nb'"  # escaped once, as a person would type it
    assert quoted("x" * 100).endswith("...'") and len(quoted("x" * 100)) == 82
