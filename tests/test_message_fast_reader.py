"""The message type and its file format; the quick header reader agrees with YAML."""

from __future__ import annotations

import copy
import pickle

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mailslot.core.errors import StoreError
from mailslot.core.message import Message, _quick_header, from_bytes, to_bytes

MID = "2026-09-21_144808.123456_claude_to_gemini_initial-handshake_7f3a9c"


def message(**changes: object) -> Message:
    fields: dict[str, object] = {"id": MID, "date": "2026-09-21T16:48:08.123456+02:00",
                                 "sender": "claude", "to": ("gemini",),
                                 "subject": "Initial handshake", "body": "Hello.\n\nBye."}
    fields.update(changes)
    return Message(**fields)  # type: ignore[arg-type]


def yaml_header(data: bytes) -> object:
    text = data.split(b"\n---\n", 1)[0][4:].decode() + "\n"
    return yaml.load(text, Loader=yaml.SafeLoader)


def test_value_semantics() -> None:
    a = message(extra={"x": 1})
    assert a == message() and hash(a) == hash(message())  # extra is not compared
    assert a != message(subject="other") and a != "text"
    assert "subject='Initial handshake'" in repr(a) and "extra" not in repr(a)
    with pytest.raises(AttributeError):
        a.subject = "changed"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del a.body
    bare = a.without_body()
    assert bare.body == "" and bare.subject == a.subject and bare.extra == {"x": 1}
    for twin in (copy.copy(a), copy.deepcopy(a), pickle.loads(pickle.dumps(a))):
        assert twin == a and twin.extra == {"x": 1}


def test_file_round_trip_takes_the_quick_path() -> None:
    full = message(re_issue="org/repo#12", in_reply_to=MID, thread=MID, expect_reply=True,
                   delivery="wake", to=("gemini", "codex"))
    data = to_bytes(full)
    head = data.split(b"\n---\n", 1)[0][4:].decode() + "\n"
    assert _quick_header(head) == yaml_header(data)
    assert from_bytes(data, name="x") == full
    assert from_bytes(data, name="x", header_only=True) == full.without_body()


@pytest.mark.parametrize("subject", ["Re: hello", "it's", "#1 priority", "- item", "yes",
                                     "123", "null", "a: b", "x #y", "  pad", "'quoted'",
                                     "%tag", "@at", "[list]", "{map}", "!bang", "&anchor",
                                     "*alias", "ünïcödé", "tab\there", "nbsp\xa0here",
                                     "2026-05-20", "1e5", ".inf", "~", "<<", "=",
                                     "\ufeffbom", "zero\u200bwidth", "emoji 🎉"])
def test_awkward_subjects_round_trip(subject: str) -> None:
    m = message(subject=subject)
    assert from_bytes(to_bytes(m), name="x") == m


def test_unreadable_headers_are_store_errors() -> None:
    for data in (b"no header", b"---\nid: [unclosed\n---\n", b"---\n- a list\n---\n",
                 b"---\nid: x\n---\n", b"---\n\xff: x\n---\n"):
        with pytest.raises(StoreError):
            from_bytes(data, name="bad.md")


# The quick reader returns what YAML returns, or declines -----------------------------
NAMES = st.from_regex(r"[a-z0-9][a-z0-9-]{0,10}", fullmatch=True)
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
WORDS = st.sampled_from(["yes", "No", "TRUE", "off", "null", "~", "-", "'", "''", ": x", "#",
                         "a #b", "0o17", "0x1f", "1_000", "1:30", "2026-05-20", ".5", "-1",
                         "+1", MID, f"{MID}x", "", " ", "\t", "x\u2028y", "\x85"])
VALUE = st.one_of(TEXT, WORDS, NAMES, st.booleans(), st.none(), st.integers())


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.one_of(st.sampled_from(["id", "date", "from", "to", "subject",
                                                  "thread", "yes", "on"]), NAMES),
                       st.one_of(VALUE, st.lists(st.one_of(NAMES, WORDS, TEXT), max_size=3)),
                       max_size=8))
def test_quick_reader_agrees_with_yaml_on_emitted_headers(head: dict[str, object]) -> None:
    text = yaml.dump(head, Dumper=yaml.SafeDumper, sort_keys=False, allow_unicode=True,
                     default_flow_style=False, width=1_000_000)
    quick = _quick_header(text)
    assert quick is None or quick == yaml.load(text, Loader=yaml.SafeLoader)


HEAD_KEYS = st.sampled_from(["id", "date", "from", "to", "subject", "thread", "yes", "re_issue"])


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(HEAD_KEYS, st.one_of(
    TEXT, WORDS, NAMES, st.lists(st.one_of(NAMES, WORDS), min_size=1, max_size=3)), max_size=6))
def test_quick_reader_agrees_with_yaml_on_message_like_headers(head: dict[str, object]) -> None:
    # Mostly text values, as in message files: here the quick path is usually taken.
    text = yaml.dump(head, Dumper=yaml.SafeDumper, sort_keys=False, allow_unicode=True,
                     default_flow_style=False, width=1_000_000)
    quick = _quick_header(text)
    assert quick is None or quick == yaml.load(text, Loader=yaml.SafeLoader)


HAND = st.text(st.characters(min_codepoint=32, max_codepoint=0x2100), max_size=12)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.sampled_from(["id", "to", "from", "subject", "x_y"]), st.one_of(
    st.one_of(HAND, WORDS), st.lists(st.one_of(HAND, WORDS), min_size=1, max_size=3)),
    min_size=1, max_size=4))
def test_quick_reader_agrees_with_yaml_on_hand_written_headers(
    head: dict[str, str | list[str]]
) -> None:
    # Written as a person might, without YAML's quoting: the reader must decline or agree.
    text = "".join(f"{k}: {v}\n" if isinstance(v, str) else f"{k}:\n" + "".join(
        f"- {item}\n" for item in v) for k, v in head.items())
    quick = _quick_header(text)
    if quick is not None:
        assert quick == yaml.load(text, Loader=yaml.SafeLoader)


LINE = st.one_of(
    st.builds(lambda k, v: f"{k}: {v}", st.sampled_from(["id", "to", "from", "x_y", "yes"]),
              st.one_of(TEXT, WORDS)),
    st.builds(lambda v: f"- {v}", st.one_of(TEXT, WORDS)),
    st.builds(lambda k: f"{k}:", st.sampled_from(["to", "re_issue"])),
    TEXT,
)


@settings(max_examples=400, deadline=None)
@given(st.lists(LINE, max_size=6))
@example(["to:", "- 'yes'", "- gemini", "subject: 'it''s'"])
@example(["id: a", "id: b"])
def test_quick_reader_agrees_with_yaml_on_any_lines(lines: list[str]) -> None:
    text = "".join(f"{line}\n" for line in lines)
    quick = _quick_header(text)
    if quick is None:
        return
    assert quick == yaml.load(text, Loader=yaml.SafeLoader)


def test_quick_reader_declines_what_it_does_not_know() -> None:
    for text in ("to: [a, b]\n", 'subject: "double"\n', "id: 1\n", "subject: a #b\n",
                 "- a\n", "  nested: x\n", "key:  two spaces\n", "yes: no\n"):
        assert _quick_header(text) is None


# The small emitter (no PyYAML on the write path) ------------------------------
# What mailslot writes in a header: one line, no control characters (text.clean_field).
_FIELD_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp")),
                      max_size=60)


@settings(max_examples=600, deadline=None, derandomize=True, database=None)
@given(subject=_FIELD_TEXT, sender=_FIELD_TEXT, recipients=st.lists(_FIELD_TEXT, min_size=1,
                                                                    max_size=3),
       re_issue=st.none() | _FIELD_TEXT, expect_reply=st.booleans(),
       delivery=st.sampled_from(["inbox", "wake"]))
@example(subject="", sender="yes", recipients=["null"], re_issue="'", expect_reply=True,
         delivery="wake")
def test_every_header_written_reads_back_through_the_safe_loader(
    subject: str, sender: str, recipients: list[str], re_issue: str | None,
    expect_reply: bool, delivery: str,
) -> None:
    """Whatever the emitter writes (or hands to PyYAML), the safe loader reads back as
    the same fields, and so does mailslot's own reader."""
    m = message(subject=subject, sender=sender, to=tuple(recipients), re_issue=re_issue,
                in_reply_to=MID, thread=MID, expect_reply=expect_reply, delivery=delivery)
    data = to_bytes(m)
    assert yaml_header(data) == m.header()
    assert from_bytes(data, name="x") == m


def test_the_usual_header_is_written_without_pyyaml() -> None:
    import subprocess
    import sys

    program = ("import sys; from mailslot.core.message import Message, to_bytes; "
               "to_bytes(Message('2026-09-21_144808.123456_a_to_b_s_7f3a9c', "
               "'2026-09-21T14:48:08+00:00', 'a', ('b',), \"it's: fine\", 'x')); "
               "print('yaml' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                         check=True).stdout
    assert out == "False\n"
