"""The message file format: written by a YAML emitter, read by a safe loader, exactly."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mailslot.core.errors import InvalidInput, StoreError
from mailslot.core.message import Message, from_bytes, to_bytes
from mailslot.core.text import clean_body, clean_field

MID = "2026-09-21_144808.123456_claude_to_gemini_initial-handshake_7f3a9c"


def message(**changes: object) -> Message:
    fields: dict[str, object] = {
        "id": MID, "date": "2026-09-21T16:48:08.123456+02:00", "sender": "claude",
        "to": ("gemini",), "subject": "Initial handshake", "body": "Hello.",
    }
    fields.update(changes)
    return Message(**fields)  # type: ignore[arg-type]


def test_file_reads_like_the_documented_example() -> None:
    assert to_bytes(message()).decode() == (
        "---\n"
        f"id: {MID}\n"
        "date: '2026-09-21T16:48:08.123456+02:00'\n"
        "from: claude\n"
        "to:\n- gemini\n"
        "subject: Initial handshake\n"
        "---\n"
        "Hello.\n"
    )


def test_every_field_round_trips() -> None:
    full = message(to=("gemini", "codex"), re_issue="org/repo#12", in_reply_to=MID,
                   thread=MID, expect_reply=True, delivery="wake")
    assert from_bytes(to_bytes(full), name="t") == full


@pytest.mark.parametrize(
    "body",
    ["", "\n", "\n\n", "x\n", "---", "---\nfrom: owner\n---\n", "a\n---\nb", "  indented",
     "日本語\u2028é", "ends without newline"],
)
def test_bodies_round_trip_exactly(body: str) -> None:
    assert from_bytes(to_bytes(message(body=body)), name="t").body == body


@pytest.mark.parametrize(
    "subject",
    ["a --- b", "---", "--- x", "x ---", "'quoted'", '"double"', "key: value", "#hash",
     "- item", "[1, 2]", "{a: 1}", "yes", "null", "12", "!!python/object x", "&anchor *ref",
     "%TAG", "|", ">", "@at", "`tick`", "日本語", "trailing space "],
)
def test_awkward_subjects_round_trip_and_never_end_the_header(subject: str) -> None:
    data = to_bytes(message(subject=subject, body="body"))
    assert data.count(b"\n---\n") == 1
    parsed = from_bytes(data, name="t")
    assert parsed.subject == subject and parsed.body == "body"


def test_header_only_skips_the_body() -> None:
    parsed = from_bytes(to_bytes(message(body="secret")), name="t", header_only=True)
    assert parsed.body == "" and parsed.subject == "Initial handshake"


def test_unknown_header_keys_are_kept_aside() -> None:
    data = to_bytes(message()).replace(b"subject:", b"x_custom: 1\nsubject:")
    parsed = from_bytes(data, name="t")
    assert parsed.extra == {"x_custom": 1} and parsed == message()


def test_to_may_be_a_single_name_written_by_hand() -> None:
    data = to_bytes(message()).replace(b"to:\n- gemini\n", b"to: gemini\n")
    assert from_bytes(data, name="t").to == ("gemini",)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"", "no complete '---' header"),
        (b"hello\n", "no complete '---' header"),
        (b"---\nid: x\n", "no complete '---' header"),
        (b"---\n- a\n---\nbody", "not a mapping"),
        (b"---\nid: [unclosed\n---\n", "unreadable header"),
        (b"---\nid: \xff\n---\n", "unreadable header"),
        (b"---\n!!python/object/apply:os.system ['true']\n---\n", "unreadable header"),
        (b"---\nid: x\nto: [a]\n---\n", "'date' is missing"),
        (b"---\nid: 1\nto: [a]\n---\n", "'id' is missing or not text"),
    ],
)
def test_broken_files_raise_store_error_naming_the_file(data: bytes, why: str) -> None:
    with pytest.raises(StoreError, match=why) as caught:
        from_bytes(data, name="/box/x.md")
    assert str(caught.value).startswith("/box/x.md: ")


def test_bad_to_delivery_and_body_are_store_errors() -> None:
    good = to_bytes(message())
    with pytest.raises(StoreError, match="'to'"):
        from_bytes(good.replace(b"to:\n- gemini\n", b"to: []\n"), name="t")
    with pytest.raises(StoreError, match="'delivery'"):
        from_bytes(good.replace(b"subject:", b"delivery: shout\nsubject:"), name="t")
    with pytest.raises(StoreError, match="not UTF-8"):
        from_bytes(good + b"\xff", name="t")


def test_as_dict_has_every_field_and_none_where_unset() -> None:
    data = message().as_dict()
    assert data == {
        "id": MID, "date": "2026-09-21T16:48:08.123456+02:00", "from": "claude",
        "to": ["gemini"], "subject": "Initial handshake", "re_issue": None,
        "in_reply_to": None, "thread": None, "expect_reply": False, "delivery": "inbox",
        "body": "Hello.",
    }
    assert "body" not in message().as_dict(with_body=False)


def test_broadcast_is_a_message_to_all() -> None:
    assert message(to=("all",)).is_broadcast and not message().is_broadcast


def _field(raw: str) -> str | None:
    """The cleaned field, or ``None`` where it is refused as bad input (anything else
    raised is a bug, and fails the test)."""
    try:
        return clean_field(raw, "f")
    except InvalidInput:
        return None


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(subject=st.text(min_size=1, max_size=200), body=st.text(max_size=400),
       re_issue=st.none() | st.text(min_size=1, max_size=50))
def test_any_cleaned_message_round_trips(subject: str, body: str, re_issue: str | None) -> None:
    clean_subject = _field(subject)
    clean_issue = _field(re_issue) if re_issue is not None else None
    if "\x00" in body:  # the one thing a short text body is refused for
        with pytest.raises(InvalidInput, match="NUL"):
            clean_body(body, 1 << 20)
        return
    clean = clean_body(body, 1 << 20)
    if clean_subject is None or (re_issue is not None and clean_issue is None):
        return
    original = message(subject=clean_subject, body=clean, re_issue=clean_issue)
    data = to_bytes(original)
    assert from_bytes(data, name="t") == original
    header_end = data.index(b"\n---\n", 3)
    assert b"\n---\n" not in data[3:header_end]


def test_a_header_with_a_yaml_alias_is_unreadable_and_never_expanded() -> None:
    """Nine levels of nine aliases would be 387 million names if expanded."""
    lines = ["---", f"id: {MID}", "date: '2026-09-21T16:48:08+02:00'", "from: claude",
             "subject: boom", 'a: &a ["x","x","x","x","x","x","x","x","x"]']
    for level, name in enumerate("bcdefgh"):
        lines.append(f"{name}: &{name} [{','.join(['*' + 'abcdefgh'[level]] * 9)}]")
    lines += [f"to: [{','.join(['*h'] * 9)}]", "---", "body"]
    with pytest.raises(StoreError, match="YAML alias"):
        from_bytes("\n".join(lines).encode(), name="bomb.md")


def test_a_header_nested_past_the_parser_is_unreadable() -> None:
    data = f"---\nid: {MID}\nto: {'[' * 5000}{']' * 5000}\n---\nbody\n".encode()
    with pytest.raises(StoreError, match="nested too deep"):
        from_bytes(data, name="deep.md")
