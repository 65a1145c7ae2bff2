"""Text rules for what goes into a message: subjects, header fields and bodies.

Header fields must stay one line so a field can never add a frontmatter line; bodies
keep their lines but lose control characters that could drive a terminal. NUL is refused
outright because no honest text carries it.
"""

from __future__ import annotations

from .errors import InvalidInput

TYPE_CHECKING = False  # typing is not loaded on the hook path (see docs/hooks.md)
if TYPE_CHECKING:
    from typing import BinaryIO, TextIO

MAX_SUBJECT_LENGTH = 200
MAX_FIELD_LENGTH = 200
DEFAULT_MAX_BODY_BYTES = 1024 * 1024

# Patterns are compiled on first use (re caches them): the hook path never needs them,
# nor re itself (with enum and functools, about 4 ms of a hook's start).
_CONTROL = r"[\x00-\x1f\x7f-\x9f]"
_BODY_CONTROL = r"[\x00-\x08\x0b-\x1f\x7f-\x9f]"
_SPACES = r"\s+"
_INVISIBLE = (r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e"
              r"\u2060-\u2064\u2066-\u2069\ufeff]")
"""Controls, bidi overrides and isolates, zero-width characters: they can make text on a
terminal read differently from what it is (a reversed command, a hidden word)."""


def quoted(raw: str, limit: int = 80) -> str:
    """``raw`` shown safely inside a one-line error: escaped, quoted and shortened."""
    short = raw if len(raw) <= limit else raw[: limit - 3] + "..."
    return "'" + short.encode("unicode_escape").decode("ascii").replace("'", "\\'") + "'"


def kind_of(value: object) -> str:
    """What a non-text value is, as JSON names it, for an error about it."""
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "a number"
    if value is None:
        return "null"
    return "a list" if isinstance(value, (list, tuple)) else "an object"


def clean_field(raw: object, field: str, limit: int = MAX_FIELD_LENGTH) -> str:
    """A one-line header value: refuse line breaks, collapse other controls and spaces.

    Only text is taken: a number is refused, never turned into text, since a field is
    stored exactly as given (``re_issue: 42`` and ``"042"`` are not the same reference)."""
    if not isinstance(raw, str):
        raise InvalidInput(f"{field} must be text (a JSON string), not {kind_of(raw)}")
    if "\x00" in raw:
        raise InvalidInput(f"{field} contains a NUL byte")
    # str.splitlines breaks at every line break a terminal or a parser may honour
    # (\r, \n, \v, \f, \x1c-\x1e, \x85, \u2028, \u2029) and needs no pattern compiled.
    if raw and raw.splitlines()[0] != raw:
        raise InvalidInput(f"{field} must be a single line (it contains a line break)")
    import re

    value = re.sub(_SPACES, " ", re.sub(_CONTROL, " ", raw)).strip()
    if not value:
        raise InvalidInput(f"{field} is empty")
    if len(value) > limit:
        raise InvalidInput(f"{field} is {len(value)} characters; the limit is {limit}")
    return value


def clean_body(raw: object, max_bytes: int) -> str:
    """A body as stored: LF line ends, no NUL, terminal controls replaced by U+FFFD."""
    if not isinstance(raw, str):
        raise InvalidInput("body must be text")
    if "\x00" in raw:
        raise InvalidInput("body contains a NUL byte")
    import re

    body = re.sub(_BODY_CONTROL, "\ufffd", raw.replace("\r\n", "\n").replace("\r", "\n"))
    size = len(body.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise InvalidInput(
            f"body is {size} bytes; the limit is {max_bytes} (max_body_bytes in config.json)"
        )
    try:
        body.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput("body is not valid UTF-8 (it holds a lone surrogate)") from None
    return body


def decode_body(raw: bytes) -> str:
    """Bytes from stdin or a file as text; invalid UTF-8 is refused, never guessed."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"body is not valid UTF-8 (bad byte at offset {exc.start})") from None


def read_body(stream: BinaryIO, max_bytes: int) -> str:
    """A body from a byte stream, never reading much past the limit."""
    raw = stream.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise InvalidInput(
            f"body is more than {max_bytes} bytes (max_body_bytes in config.json); "
            "nothing was sent"
        )
    return decode_body(raw)


def piped_body(stdin: TextIO | None, max_bytes: int) -> str:
    """The body piped on ``stdin``, for a command given no ``--body``. Refused in one
    line when nothing was piped: ``stdin`` is a terminal, or it held only white space
    (as an agent's shell runs a command, with an empty stdin). An empty message is sent
    only when asked for: ``--body ''``."""
    if stdin is None or stdin.isatty():
        raise InvalidInput("no body: pass --body TEXT or pipe the body on stdin")
    body = read_body(stdin.buffer, max_bytes)
    if not body.strip():
        raise InvalidInput("no body: stdin was empty; pass --body TEXT or pipe the body "
                           "(--body '' sends an empty one); nothing was sent")
    return body


def for_terminal(text: str) -> str:
    """``text`` to show a person: every invisible or reordering character made visible
    as ``<U+202E>``. Display only: the stored message keeps its bytes."""
    if text.isascii() and text.isprintable():
        return text
    import re

    return re.sub(_INVISIBLE, lambda m: f"<U+{ord(m.group()):04X}>", text)
