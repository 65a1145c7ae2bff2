"""Agent names: what may be a name, what is reserved, and how refusals read."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mailslot.core.errors import InvalidInput
from mailslot.core.names import (
    RESERVED,
    SESSION_KEY,
    check_name,
    from_folder,
    is_valid_name,
)


@pytest.mark.parametrize("raw", ["claude", "a", "0", "gemini-2", "a-", "x" * 64])
def test_valid_names_pass_unchanged(raw: str) -> None:
    assert check_name(raw) == raw
    assert is_valid_name(raw)


def test_names_are_matched_case_insensitively_and_stored_lowercased() -> None:
    assert check_name("Claude") == "claude"
    assert check_name("GEMINI-CLI") == "gemini-cli"


@pytest.mark.parametrize("raw", ["all", "ALL", "All", "unknown", "mailslot", "MailSlot",
                                 "_", "_broadcast", "_x"])
def test_reserved_names_are_refused(raw: str) -> None:
    with pytest.raises(InvalidInput, match="is reserved"):
        check_name(raw)
    assert not is_valid_name(raw)


def test_reserved_set_is_the_documented_one() -> None:
    assert frozenset({"all", "unknown", "mailslot"}) == RESERVED


@pytest.mark.parametrize(
    "raw",
    ["-x", "a_b", "a b", "a.b", "../x", "..", ".", "a/b", "x/../y", "é", "claude\n",
     "a\x00b", "tab\t", "\u212a"],
)
def test_malformed_names_are_refused(raw: str) -> None:
    with pytest.raises(InvalidInput, match="not valid"):
        check_name(raw)
    assert not is_valid_name(raw)


def test_length_limit_is_64() -> None:
    with pytest.raises(InvalidInput, match="65 characters; the limit is 64"):
        check_name("x" * 65)


@pytest.mark.parametrize("raw", ["", None, 3, ["claude"]])
def test_empty_or_non_text_is_refused(raw: object) -> None:
    with pytest.raises(InvalidInput, match="is empty"):
        check_name(raw)


def test_refusal_names_the_role_and_shows_the_value_on_one_line() -> None:
    with pytest.raises(InvalidInput) as caught:
        check_name("evil\nname", "recipient")
    text = str(caught.value)
    assert text.startswith("recipient 'evil\\nname'") and "\n" not in text


_SOME = st.text(alphabet="aZz09-._/ \n\u00e9\u212a_+", max_size=130)


@given(_SOME)
def test_names_and_session_keys_are_exactly_their_documented_patterns(raw: str) -> None:
    """Checked with string methods (no pattern compiled at every hook's start), they
    accept exactly what the documented patterns accept."""
    name = raw.lower() if raw.isascii() else raw
    expected = bool(re.fullmatch(r"[a-z0-9][a-z0-9-]{0,63}", name)) and name not in RESERVED
    assert is_valid_name(raw) == expected
    key = re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}", raw)
    assert SESSION_KEY.fullmatch(raw) == bool(key)


@pytest.mark.parametrize(("folder", "name"), [
    ("My_App", "my-app"), ("foo.js", "foo-js"), ("Über Tool", "uber-tool"), ("app_", "app"),
    ("_under", "_under"), ("_My_App", "_my-app"), ("__", "_")])
def test_a_folder_name_keeps_the_leading_underscore_that_makes_it_reserved(
        folder: str, name: str) -> None:
    """A checkout named ``_under`` never speaks as ``under``: its name is reserved, as
    ``--agent _under`` is, and refused the same way."""
    assert from_folder(folder) == name
    assert is_valid_name(name) == (not folder.startswith("_"))
