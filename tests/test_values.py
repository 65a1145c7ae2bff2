"""mailslot.core.values: the value classes every command loads behave as dataclasses do."""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import pytest

from mailslot.core import values


@values.dataclass(frozen=True)
class Light:
    name: str
    count: int = 0
    tags: list[str] = values.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class Real:
    name: str
    count: int = 0
    tags: list[str] = dataclasses.field(default_factory=list)


@values.dataclass(frozen=True)
class Point:
    x: int
    y: int


@values.dataclass
class Mutable:
    name: str
    inner: Light | None = None


def test_construction_equality_and_repr_match_dataclasses() -> None:
    for args, kwargs in (((("a",)), {}), (("a", 2), {}), (("a",), {"tags": ["x"]}),
                         ((), {"name": "a", "count": 3})):
        light, real = Light(*args, **kwargs), Real(*args, **kwargs)
        assert repr(light).replace("Light", "Real") == repr(real)
        assert (light.name, light.count, light.tags) == (real.name, real.count, real.tags)
    assert Light("a") == Light("a") and Light("a") != Light("b")
    assert Light("a") != Real("a")  # another class is never equal, as with dataclasses
    assert Light("a").tags is not Light("a").tags  # a fresh default each time
    assert hash(Point(1, 2)) == hash(Point(1, 2)) and len({Point(1, 2), Point(1, 2)}) == 1
    for value in (Light("a"), Real("a")):  # hashed by its fields: a list one cannot be
        with pytest.raises(TypeError):
            hash(value)


def test_frozen_refuses_assignment_and_mutable_allows_it() -> None:
    light = Light("a")
    with pytest.raises(AttributeError):
        light.name = "b"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del light.name  # type: ignore[misc]
    mutable = Mutable("a")
    mutable.name = "b"
    assert mutable == Mutable("b")
    with pytest.raises(TypeError):
        hash(mutable)  # eq without frozen: unhashable, as with dataclasses


def test_wrong_arguments_are_refused() -> None:
    with pytest.raises(TypeError):
        Light()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Light("a", 1, [], 4)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Light("a", name="b")  # type: ignore[misc]
    with pytest.raises(TypeError):
        Light("a", colour="red")  # type: ignore[call-arg]


def test_replace_and_asdict() -> None:
    light = Light("a", 1, ["x"])
    assert values.replace(light, count=2) == Light("a", 2, ["x"])
    assert light.count == 1
    with pytest.raises(TypeError):
        values.replace(light, colour="red")
    assert values.asdict(Mutable("m", light)) == {
        "name": "m", "inner": {"name": "a", "count": 1, "tags": ["x"]}}


def test_replace_and_asdict_also_take_real_dataclasses() -> None:
    """A module may mix both kinds (the wake runner replaces a store's WakeEntry)."""
    assert values.replace(Real("a"), count=2) == Real("a", 2)
    assert values.asdict(Real("a", 1, ["x"])) == {"name": "a", "count": 1, "tags": ["x"]}


def test_a_hidden_field_stays_out_of_the_repr_and_post_init_runs() -> None:
    @values.dataclass(frozen=True)
    class Secretive:
        name: str
        token: str = values.field(default_factory=lambda: "s3cret", repr=False)

        def __post_init__(self) -> None:
            if not self.name:
                raise ValueError("a name is needed")

    assert repr(Secretive("a")) == "test_a_hidden_field_stays_out_of_the_repr_and_post_init_" \
        "runs.<locals>.Secretive(name='a')"
    assert Secretive("a") == Secretive("a") and Secretive("a").token == "s3cret"
    with pytest.raises(ValueError, match="a name is needed"):
        Secretive("")


EVERYDAY = [["--agent", "a", "send", "--to", "b", "--subject", "s", "--body", "b", "--new"],
            ["--agent", "b", "inbox"], ["who"], ["doctor"], ["--agent", "a", "sent"],
            ["--agent", "b", "status", "zzzzzz"], ["--agent", "b", "read", "zzzzzz"]]
"""The timed commands (and two that fail at once), whose modules keep the trick."""
HOOKS = ("session-start", "user-prompt-submit", "stop", "post-tool-use")
LOADED = """
import json, os, sys
from mailslot.entry import main
sys.argv = ["mailslot", *sys.argv[1:]]
os._exit = sys.exit
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.startswith("mailslot"))), file=sys.stderr)
"""


def _everyday_modules(tmp: Path) -> set[str]:
    """Every module of the package that the everyday commands and the hooks load."""
    import json
    import subprocess
    import sys

    env = {**os.environ, "MAILSLOT_DIR": str(tmp / "mailbox")}
    env.pop("MAILSLOT_AGENT", None)
    runs = [(argv, None) for argv in EVERYDAY] + [
        (["hook", "claude", event], '{"session_id": "s1"}') for event in HOOKS]
    found: set[str] = set()
    for argv, stdin in runs:
        done = subprocess.run([sys.executable, "-c", LOADED, *argv], input=stdin, text=True,
                              capture_output=True, timeout=60, check=False,
                              env={**env, "MAILSLOT_AGENT": "b"} if stdin else env)
        found |= set(json.loads(done.stderr.strip().splitlines()[-1]))
    return found


def test_only_the_everyday_paths_make_values_without_dataclasses(tmp_path: Path) -> None:
    """Start-up tricks only where they pay: a module the everyday commands or the hooks
    load makes its value classes (and protocols) with mailslot.core.values; every other
    module uses ``dataclasses`` and ``typing`` as any Python program would."""
    package = Path(values.__file__).resolve().parent.parent
    everyday = _everyday_modules(tmp_path)
    assert "mailslot.service.listings" in everyday  # the probe saw the inbox
    tricks, plain = [], []
    for path in sorted(package.rglob("*.py")):
        if path == Path(values.__file__).resolve():
            continue
        text = path.read_text()
        name = ".".join(("mailslot", *path.relative_to(package).with_suffix("").parts))
        name = name.removesuffix(".__init__")
        made = re.search(r"core\.values import [^\n]*\b(dataclass|field|asdict|Protocol)\b",
                         text)
        stdlib = "from dataclasses import" in text or "import dataclasses" in text
        if made and name not in everyday:
            tricks.append(name)
        if stdlib and name in everyday:
            plain.append(name)
    assert tricks == [], "off the everyday paths, use dataclasses and typing"
    assert plain == [], "on the everyday paths, use mailslot.core.values"
