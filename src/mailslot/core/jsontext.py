"""JSON text in and out, exactly as :mod:`json` reads and writes it, for the hook path.

Importing :mod:`json` compiles six regular expressions and loads :mod:`re`, which loads
``enum``, ``functools`` and ``collections``: about a third of what a hook costs beyond
Python's own start. The parsing and writing themselves are done in C by ``_json``, the
accelerator :mod:`json` uses, so this module calls it directly. Anything it does not
handle the way :mod:`json` would (text that is not JSON, indented output, an
interpreter without ``_json``) goes to :mod:`json` itself, so every result and every
error is the one :func:`json.loads` or :func:`json.dumps` gives.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_SPACE = " \t\n\r"  # the whitespace JSON allows between tokens

try:
    import _json
except ImportError:  # another interpreter: json alone
    _json = None  # type: ignore[assignment]


class _Options:
    """What ``_json``'s scanner reads from :class:`json.JSONDecoder`: its defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"NaN": float("nan"), "Infinity": float("inf"),
                      "-Infinity": float("-inf")}.__getitem__


def _unserialisable(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


_scan: Callable[[str, int], tuple[Any, int]] | None = None
if _json is not None:
    _scan = _json.make_scanner(_Options())  # type: ignore[arg-type]  # reads these six


def loads(document: str | bytes) -> Any:
    """The value of a JSON document, as :func:`json.loads` returns it (bytes are read as
    UTF-8 here; any other encoding :mod:`json` accepts goes to it)."""
    if _scan is not None:
        try:
            text = document if isinstance(document, str) else document.decode("utf-8")
            value, end = _scan(text, len(text) - len(text.lstrip(_SPACE)))
        except RecursionError:
            raise
        except Exception:  # not UTF-8 or not JSON: json reads it or says why
            pass
        else:
            if len(text.rstrip(_SPACE)) == end:  # a value never ends in whitespace
                return value
    import json

    return json.loads(document)


def dumps(value: object, *, ascii: bool = True, compact: bool = False) -> str:
    """``value`` as :func:`json.dumps` writes it with ``ensure_ascii=ascii`` and, when
    ``compact``, ``separators=(",", ":")``."""
    items, keys = (",", ":") if compact else (", ", ": ")
    if _json is not None:
        quote = _json.encode_basestring_ascii if ascii else _json.encode_basestring
        encode = _json.make_encoder({}, _unserialisable, quote, None, keys, items,
                                    False, False, True)
        return "".join(encode(value, 0))
    import json

    return json.dumps(value, ensure_ascii=ascii, separators=(items, keys))
