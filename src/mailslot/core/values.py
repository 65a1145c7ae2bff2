"""Value classes as ``dataclasses`` makes them, without importing ``dataclasses``.

Why: a CLI command is a whole process, and ``dataclasses`` costs it twice: its import
pulls in ``inspect`` (with ``ast``, ``dis``, ``tokenize``), and each class it makes
compiles six methods from source at start-up. For the twenty value classes every command
loads, that was the largest part of ``mailslot send`` (the CLI within 3x of
``python -c pass``). :class:`~mailslot.core.message.Message` is hand-written for the same
reason.

The modules the everyday commands and the hooks load import ``dataclass``, ``field``,
``replace`` and ``asdict`` from here instead of from ``dataclasses``, and ``Protocol``
instead of from ``typing``; every other module uses ``dataclasses`` and ``typing`` as any
Python program would (the trick only where it pays). A type checker sees the real
``dataclasses`` (the ``TYPE_CHECKING`` branch), so the classes are checked exactly as
dataclasses; at run time these small versions support what mailslot uses and nothing
more: ``@dataclass`` or ``@dataclass(frozen=True)``, defaults, ``field(default_factory=...)``,
and equality, hashing (frozen only) and ``repr`` by fields, in declaration order, as
``dataclasses`` defines them, ``field(repr=False)`` and ``__post_init__``. ``tests/test_values.py``
checks both rules against the modules those commands really load; ``replace`` and
``asdict`` from here also work on a real dataclass.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dataclasses import asdict, dataclass, field, replace
    from typing import Protocol
else:
    Protocol = object
    """A protocol is for type checkers only: at run time it is a plain base class, so the
    modules that declare one do not load ``typing``."""

    class FrozenInstanceError(AttributeError):
        """Assigning to a field of a frozen value (``dataclasses`` raises its own)."""

    class _Factory:
        __slots__ = ("make", "shown")

        def __init__(self, make, shown):
            self.make = make
            self.shown = shown

    def field(*, default_factory, repr=True):
        """A default made anew for each value (only ``default_factory`` is supported);
        ``repr=False`` leaves the field out of the ``repr`` (a secret, a large value)."""
        return _Factory(default_factory, repr)

    def dataclass(cls=None, /, *, frozen=False):
        """The class with ``__init__``, ``__eq__``, ``__repr__`` (and, frozen, ``__hash__``
        and no assignment) made from its annotated fields."""

        def wrap(cls):
            return _build(cls, frozen)

        return wrap if cls is None else wrap(cls)

    def replace(value, /, **changes):
        """A copy of ``value`` with some fields changed (a real dataclass too)."""
        fields = getattr(type(value), "__value_fields__", None)
        if fields is None:
            import dataclasses

            return dataclasses.replace(value, **changes)
        unknown = set(changes) - set(fields)
        if unknown:
            raise TypeError(f"{type(value).__name__} has no field {sorted(unknown)[0]!r}")
        return type(value)(**{name: changes.get(name, getattr(value, name)) for name in fields})

    def asdict(value):
        """The fields as a dict, values that are themselves value classes (also in lists)
        turned into dicts too (a real dataclass: as ``dataclasses.asdict``)."""
        fields = getattr(type(value), "__value_fields__", None)
        if fields is None:
            import dataclasses

            return dataclasses.asdict(value)
        return {name: _plain(getattr(value, name)) for name in fields}

    def _plain(value):
        if hasattr(type(value), "__value_fields__"):
            return asdict(value)
        if isinstance(value, list | tuple):
            return type(value)(_plain(v) for v in value)
        if isinstance(value, dict):
            return {k: _plain(v) for k, v in value.items()}
        return value

    _NONE = object()

    def _build(cls, frozen):
        """``cls`` made a value class: its fields found, its methods made and set."""
        defaults, hidden = _fields_of(cls)
        fields = tuple(defaults)
        shown_fields = tuple(n for n in fields if n not in hidden)
        with_default = [defaults[n] is not _NONE for n in fields]
        if with_default != sorted(with_default):
            raise TypeError(f"{cls.__name__}: a field without a default follows one with")
        methods = _methods(cls, fields, defaults, shown_fields, frozen)
        for name, method in methods.items():
            if name in cls.__dict__ and name != "__hash__":
                continue  # a method the class wrote itself wins, as with dataclasses
            if method is not None:
                method.__qualname__ = f"{cls.__qualname__}.{name}"
            setattr(cls, name, method)
        cls.__value_fields__ = fields
        cls.__value_defaults__ = defaults
        cls.__value_hidden__ = frozenset(hidden)
        cls.__match_args__ = fields
        return cls

    def _fields_of(cls):
        """Each field's default (``_NONE``: none) in declaration order, the bases' fields
        first, and the fields ``repr`` leaves out. A ``field(...)`` default leaves the
        class (as with dataclasses: it is made anew for each value)."""
        defaults = {}
        for base in reversed(cls.__mro__[1:]):
            defaults.update(getattr(base, "__value_defaults__", {}))
        annotations = cls.__dict__.get("__annotations__", {})  # noqa: RUF063 (no inspect)
        own = [name for name, kind in annotations.items()
               if not str(kind).startswith(("ClassVar", "typing.ClassVar"))]
        hidden = set()
        for base in reversed(cls.__mro__[1:]):
            hidden.update(getattr(base, "__value_hidden__", ()))
        for name in own:
            value = cls.__dict__.get(name, _NONE)
            defaults[name] = value
            if isinstance(value, _Factory):
                delattr(cls, name)
                if not value.shown:
                    hidden.add(name)
        return defaults, hidden

    def _methods(cls, fields, defaults, shown_fields, frozen):
        """The methods ``dataclasses`` would make for these fields, by name (``__hash__``
        ``None``: unhashable)."""

        def _key(self):
            return tuple(getattr(self, n) for n in fields)

        def __eq__(self, other):
            if other.__class__ is not self.__class__:
                return NotImplemented
            return _key(self) == _key(other)

        def __repr__(self):
            shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in shown_fields)
            return f"{cls.__qualname__}({shown})"

        methods = {"__init__": _init(cls, fields, defaults), "__eq__": __eq__,
                   "__repr__": __repr__}
        if frozen:
            def __setattr__(self, name, value):
                raise FrozenInstanceError(f"cannot assign to field {name!r}")

            def __delattr__(self, name):
                raise FrozenInstanceError(f"cannot delete field {name!r}")

            def __hash__(self):
                return hash(_key(self))

            methods.update(__setattr__=__setattr__, __delattr__=__delattr__,
                           __hash__=__hash__)
        elif "__hash__" not in cls.__dict__:
            methods["__hash__"] = None  # as dataclasses: eq without frozen is unhashable
        return methods

    def _init(cls, fields, defaults):
        """``__init__``: positional fields, then keywords, then defaults, each set past a
        frozen class's ``__setattr__``; then ``__post_init__``."""
        post_init = getattr(cls, "__post_init__", None)
        setter = object.__setattr__

        def __init__(self, *args, **kwargs):
            if len(args) > len(fields):
                raise TypeError(f"{cls.__name__}() takes {len(fields)} arguments, "
                                f"{len(args)} given")
            for name, value in zip(fields, args, strict=False):
                if name in kwargs:
                    raise TypeError(f"{cls.__name__}() got {name!r} twice")
                setter(self, name, value)
            for name in fields[len(args):]:
                value = kwargs.pop(name, _NONE)
                if value is _NONE:
                    value = defaults[name]
                    if value is _NONE:
                        raise TypeError(f"{cls.__name__}() is missing {name!r}")
                    if isinstance(value, _Factory):
                        value = value.make()
                setter(self, name, value)
            if kwargs:
                raise TypeError(f"{cls.__name__}() got an unexpected {next(iter(kwargs))!r}")
            if post_init is not None:
                post_init(self)

        return __init__

__all__ = ["Protocol", "asdict", "dataclass", "field", "replace"]
