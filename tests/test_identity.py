"""Identity: --agent, then MAILSLOT_AGENT, then the git toplevel's name; never the cwd's."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from mailslot.access.identity import derive_identity, git_toplevel


def git_init(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def test_flag_beats_env_beats_git(tmp_path: Path) -> None:
    repo = git_init(tmp_path / "project")
    assert derive_identity("claude", {"MAILSLOT_AGENT": "codex"}, repo).name == "claude"
    found = derive_identity(None, {"MAILSLOT_AGENT": "codex"}, repo)
    assert found is not None and (found.name, found.source) == ("codex", "MAILSLOT_AGENT")
    found = derive_identity(None, {}, repo)
    assert found is not None
    assert (found.name, found.source, found.path) == ("project", "git", str(repo))


def test_an_empty_env_value_is_no_identity(tmp_path: Path) -> None:
    assert derive_identity(None, {"MAILSLOT_AGENT": ""}, tmp_path) is None


def test_an_explicit_empty_flag_is_kept_for_the_service_to_refuse() -> None:
    found = derive_identity("", {"MAILSLOT_AGENT": "codex"})
    assert found is not None and found.name == ""


def test_a_subfolder_of_a_checkout_speaks_as_the_checkout(tmp_path: Path) -> None:
    repo = git_init(tmp_path / "webapp")
    sub = repo / "src" / "deep"
    sub.mkdir(parents=True)
    found = derive_identity(None, {}, sub)
    assert found is not None and found.name == "webapp"


def test_a_linked_worktree_speaks_as_its_own_folder(tmp_path: Path) -> None:
    repo = git_init(tmp_path / "main-repo")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "--allow-empty", "-m", "x"],
                   check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "worktree", "add", "-q", str(tmp_path / "feature")],
                   check=True, env=env)
    assert (tmp_path / "feature" / ".git").is_file()
    found = derive_identity(None, {}, tmp_path / "feature")
    assert found is not None and found.name == "feature"


def test_outside_any_checkout_there_is_no_identity(tmp_path: Path) -> None:
    plain = tmp_path / "not-a-repo" / "sub"
    plain.mkdir(parents=True)
    assert git_toplevel(plain) is None
    assert derive_identity(None, {}, plain) is None
