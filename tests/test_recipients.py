"""Recipient rules: parsing, the typo guard and its notes (issue 11)."""

from __future__ import annotations

import pytest

from mailslot.core.errors import InvalidInput
from mailslot.service.recipients import check_new, parse


def test_parse_splits_lowercases_and_dedupes() -> None:
    assert parse(["Gemini, codex", "gemini"]) == ["gemini", "codex"]
    assert parse("claude") == ["claude"]
    for bad in ("all", "ALL", "", [], "a/b"):
        with pytest.raises(InvalidInput):
            parse(bad)
    with pytest.raises(InvalidInput, match="broadcast"):
        parse("gemini,all")


def test_a_near_miss_is_refused_and_a_new_name_noted() -> None:
    roster = ["codex", "gemini", "sarah"]
    with pytest.raises(InvalidInput, match="did you mean gemini\\?"):
        check_new(["gemnii"], roster, "claude", allow_new=False)
    assert check_new(["gemnii"], roster, "claude", allow_new=True) == [
        "gemnii had no mailbox; a new one was made"]
    assert check_new(["reviewer"], roster, "claude", allow_new=False) == [
        "reviewer had no mailbox; a new one was made"]
    assert check_new(["gemini", "claude"], roster, "claude", allow_new=False) == []
