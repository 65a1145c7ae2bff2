"""The public API: a short sorted list, every name importable (loaded on first use)."""

from __future__ import annotations

import importlib
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import mailslot

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("package", ["mailslot", "mailslot.store"])
def test_exports_are_sorted_and_resolve(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__ == sorted(module.__all__)
    for name in module.__all__:
        assert getattr(module, name) is not None
    with pytest.raises(AttributeError):
        module.no_such_name  # noqa: B018


def _build(tmp_path: Path) -> tuple[Path, Path]:
    """The sdist and the wheel, built as an index would get them: from the tracked files
    only (a copy of what git holds), through the PEP 517 backend the project names."""
    tree = tmp_path / "tree"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True).stdout.decode().split("\0")
    for name in filter(None, tracked):
        if (ROOT / name).is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, tree / name)
    out = tmp_path / "dist"
    script = ("import sys; from setuptools import build_meta as b; "  # it rewrites argv
              "out, names = sys.argv[1:]; "
              "built = [b.build_sdist(out), b.build_wheel(out)]; "
              "open(names, 'w').write(' '.join(built))")
    names = tmp_path / "built"
    done = subprocess.run([sys.executable, "-c", script, str(out), str(names)], cwd=tree,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    sdist, wheel = names.read_text().split()
    return out / sdist, out / wheel


def test_the_sdist_and_wheel_carry_the_licence_docs_and_one_version(tmp_path: Path) -> None:
    """A user of a package index gets the licence the metadata names, the docs the README
    links to, and one version: the metadata's is `mailslot --version`'s and the newest
    release heading of CHANGELOG.md."""
    sdist, wheel = _build(tmp_path)
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {"LICENSE", "CHANGELOG.md", "README.md", "docs/security.md",
            "docs/web-overview.png"} <= names
    linked = set(re.findall(r"\]\((docs/[^)#]+)", (ROOT / "README.md").read_text()))
    assert linked and linked <= names, linked - names
    with zipfile.ZipFile(wheel) as archive:
        info = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(info).decode()
        assert any(n.endswith(".dist-info/licenses/LICENSE") for n in archive.namelist())
    assert f"\nVersion: {mailslot.__version__}\n" in metadata
    assert "\nLicense-Expression: MIT\n" in metadata
    assert "\nAuthor: The mailslot developers" in metadata or "Author-email" in metadata
    newest = re.search(r"^## (\d+\.\d+\.\d+) - (\d{4}-\d\d-\d\d)$",
                       (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert newest and newest.group(1) == mailslot.__version__
