"""A plain command line parsed without argparse, as argparse would parse it.

argparse loads ``re``, ``enum``, ``functools``, ``collections`` and ``gettext``: a
quarter of ``mailslot inbox``'s start. Most lines are plain: the command word, options
spelled out in full (``--opt value``, ``--opt=value``, ``--flag``) and single positional
words. :func:`parse_plain` reads such a line from the command's own declaration (the
same ``add_argument`` calls argparse gets, recorded) and gives the handler what
argparse would. Anything else (help, a short or abbreviated option, a value that starts
with ``-``, a missing or unknown word, a value argparse would refuse, an option kind it
does not know) makes it answer ``None``, and the line goes to argparse (:mod:`.parser`),
so help and every usage error are argparse's own, word for word.
"""

from __future__ import annotations

from .command import Command, global_options, remote_option

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from argparse import Namespace
    from collections.abc import Callable, Iterator, Sequence
else:
    class Namespace:
        """argparse's ``Namespace`` to a handler: each option an attribute."""

        def __init__(self, **values: object) -> None:
            self.__dict__.update(values)

_KINDS: dict[str | None, str | bool] = {
    None: "store", "store": "store", "append": "append", "store_true": True,
    "store_false": False}
"""The ``action``s taken here: a value (kept, or appended), or a flag and what it sets."""
_IGNORED = frozenset({"help", "metavar"})
_SUPPRESS = "==SUPPRESS=="  # argparse.SUPPRESS, which argparse alone knows what to do with


class _Unsupported(Exception):
    """A declaration this parser does not take: argparse parses the line."""


class _Spec:
    __slots__ = ("choices", "default", "dest", "kind", "required", "type")

    def __init__(self, dest: str, kind: str | bool, type: Callable[[str], object] | None,
                 choices: Sequence[object] | None, required: bool, default: object) -> None:
        self.dest, self.kind, self.type, self.choices = dest, kind, type, choices
        self.required, self.default = required, default

    def value(self, text: str) -> object:
        """``text`` converted and checked, as argparse would; raises on a value it
        would refuse."""
        found = self.type(text) if self.type is not None else text
        if self.choices is not None and found not in self.choices:
            raise _Unsupported(text)
        return found


class _Recorder:
    """Takes the ``add_argument`` calls a command's declaration makes of a parser."""

    def __init__(self) -> None:
        self.options: dict[str, _Spec] = {}
        self.positionals: list[_Spec] = []

    def add_argument_group(self, *args: object, **kwargs: object) -> _Recorder:
        return self

    def add_argument(self, *flags: str, action: str | None = None,
                     type: Callable[[str], object] | None = None,
                     choices: Sequence[object] | None = None, required: bool = False,
                     default: object = None, dest: str | None = None,
                     **rest: object) -> None:
        if action not in _KINDS or not flags or set(rest) - _IGNORED or default == _SUPPRESS:
            raise _Unsupported(flags)
        kind = _KINDS[action]
        if isinstance(kind, bool) and default is None:
            default = not kind
        if isinstance(default, str) and type is not None:
            default = type(default)  # argparse converts a default given as text
        if not flags[0].startswith("-"):
            if len(flags) != 1 or kind != "store" or dest is not None:
                raise _Unsupported(flags)
            self.positionals.append(_Spec(flags[0], kind, type, choices, True, default))
            return
        if not all(f.startswith("--") for f in flags):
            raise _Unsupported(flags)  # a short option: argparse groups and splits them
        spec = _Spec(dest or flags[0][2:].replace("-", "_"), kind, type, choices, required,
                     default)
        self.options.update(dict.fromkeys(flags, spec))


def parse_plain(argv: Sequence[str], command: Command) -> Namespace | None:
    """What ``mailslot``'s argparse parser makes of ``argv`` naming ``command``, or
    ``None`` when the line is not plain (the module docstring says what that is)."""
    top, own = _Recorder(), _Recorder()
    try:
        global_options(top, top=True)  # type: ignore[arg-type]
        command.add_arguments(own)  # type: ignore[arg-type]
        if command.remote:
            remote_option(own)  # type: ignore[arg-type]
        return _parse(iter(argv), command.name, top, own)
    except Exception:  # _Unsupported, a value its type refused, a declaration argparse
        return None    # alone knows: argparse parses the line, and says what is wrong


def _parse(words: Iterator[str], name: str, top: _Recorder, own: _Recorder) -> Namespace:
    values: dict[str, object] = {s.dest: s.default for s in top.options.values()}
    values["command"] = name
    values.update((s.dest, s.default) for s in [*own.options.values(), *own.positionals])
    given: set[str] = set()
    options, positionals = top.options, iter(own.positionals)
    for word in words:
        if not word.startswith("--") or word == "--":
            if word.startswith("-"):
                raise _Unsupported(word)  # short options, "-", a negative number, "--"
            if options is top.options:  # the command word (the first plain word)
                if word != name:
                    raise _Unsupported(word)
                options = {**top.options, **own.options}
                continue
            spec = next(positionals, None)
            if spec is None:
                raise _Unsupported(word)
            values[spec.dest] = spec.value(word)
            given.add(spec.dest)
            continue
        flag, equals, text = word.partition("=")
        spec = options.get(flag)
        if spec is None:
            raise _Unsupported(word)  # --help, an abbreviation, unknown or misplaced
        if isinstance(spec.kind, bool):
            if equals:
                raise _Unsupported(word)
            values[spec.dest] = spec.kind
        else:
            if not equals:
                found = next(words, None)
                if found is None or found.startswith("-"):
                    raise _Unsupported(word)
                text = found
            value = spec.value(text)
            if spec.kind == "append":
                listed = values[spec.dest]
                value = [*(listed if isinstance(listed, list) else ()), value]
            values[spec.dest] = value
        given.add(spec.dest)
    if options is top.options or next(positionals, None) is not None:
        raise _Unsupported("no command, or a positional word missing")
    if any(s.required and s.dest not in given for s in own.options.values()):
        raise _Unsupported("a required option missing")
    return Namespace(**values)
