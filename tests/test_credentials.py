"""Credential files: random, private, outside checkouts, never shown."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import Result
from mailslot import FileStore
from mailslot.access.credentials import (
    Credential,
    default_path,
    hash_secret,
    new_secret,
    read_binding,
    read_credential,
    secret_matches,
    write_credential,
)
from mailslot.core.errors import InvalidInput, Unauthorized


def test_secret_has_256_bits_and_is_fresh() -> None:
    secrets = {new_secret() for _ in range(50)}
    assert len(secrets) == 50
    assert all(len(s) >= 43 for s in secrets)  # 32 bytes, base64url


def test_hash_matches_only_its_secret() -> None:
    secret = new_secret()
    stored = hash_secret(secret)
    assert secret not in stored and stored.startswith("sha256:")
    assert secret_matches(stored, secret)
    assert not secret_matches(stored, secret + "x")
    assert not secret_matches("garbage", secret)


def test_default_path_follows_xdg(tmp_path: Path) -> None:
    assert default_path("claude", {"XDG_CONFIG_HOME": str(tmp_path)}) == str(
        tmp_path / "mailslot" / "credentials" / "claude.json")
    assert default_path("claude", {}).endswith(".config/mailslot/credentials/claude.json")


def test_written_file_is_private_and_round_trips(tmp_path: Path) -> None:
    cred = Credential("reviewer", new_secret(), "/mailbox", 3, parent_generation=2)
    path = Path(write_credential(cred, str(tmp_path / "creds" / "reviewer.json")))
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    data = json.loads(path.read_text())
    assert data == {"agent": "reviewer", "secret": cred.secret, "store": "/mailbox",
                    "generation": 3, "parent_generation": 2}
    again = read_credential(str(path))
    assert (again.agent, again.secret, again.store, again.generation,
            again.parent_generation) == ("reviewer", cred.secret, "/mailbox", 3, 2)
    assert cred.secret not in repr(again)


def test_refused_inside_a_git_worktree(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    cred = Credential("claude", new_secret(), "/mailbox", 1)
    with pytest.raises(InvalidInput, match="inside the git checkout"):
        write_credential(cred, str(repo / "sub" / "claude.json"))
    assert not (repo / "sub").exists()


def test_a_file_others_can_read_is_refused_without_quoting_it(tmp_path: Path) -> None:
    cred = Credential("claude", new_secret(), "/mailbox", 1)
    path = write_credential(cred, str(tmp_path / "c.json"))
    os.chmod(path, 0o644)
    with pytest.raises(InvalidInput, match="open to other users") as caught:
        read_credential(path)
    assert cred.secret not in str(caught.value)


@pytest.mark.parametrize("content", [b"", b"{", b'{"agent": "claude"}', b"[1]",
                                     b'{"agent": "claude", "secret": 1, "store": "/m", '
                                     b'"generation": 1}'])
def test_a_malformed_file_is_refused_without_quoting_it(tmp_path: Path, content: bytes
                                                        ) -> None:
    path = tmp_path / "c.json"
    path.write_bytes(content)
    path.chmod(0o600)
    with pytest.raises(InvalidInput, match="not a mailslot credential file") as caught:
        read_credential(str(path))
    assert "secret" not in str(caught.value)


def test_a_link_is_not_followed(tmp_path: Path) -> None:
    cred = Credential("claude", new_secret(), "/mailbox", 1)
    real = write_credential(cred, str(tmp_path / "real.json"))
    (tmp_path / "link.json").symlink_to(real)
    with pytest.raises(InvalidInput, match="cannot read"):
        read_credential(str(tmp_path / "link.json"))


# Bindings: a credential a launcher hands one child -------------------------------------
def sleeper() -> subprocess.Popen[bytes]:
    """A process of this user that this test process did not start itself... as far as a
    binding for it is concerned: this process is its parent, not its child."""
    return subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                            stdin=subprocess.PIPE)


def ended(child: subprocess.Popen[bytes]) -> None:
    assert child.stdin is not None
    child.stdin.close()
    child.wait(30)


@pytest.fixture
def bound(cli: Callable[..., Result], tmp_path: Path) -> Callable[[int], Path]:
    """``bound(pid)``: the child agent ``tester`` (of ``claude``) issued as a binding
    for launcher ``pid``, as a launcher asks for it."""
    assert cli("agent", "add", "claude", "--yes").code == 0

    def issue(pid: int) -> Path:
        path = tmp_path / "run" / f"tester-{pid}.json"
        action = "rotate" if (tmp_path / "run").exists() else "add"
        done = cli("agent", action, "tester", *(["--parent", "claude"] if action == "add"
                                                else []),
                   "--credential-file", str(path), "--bind-to", str(pid), "--yes")
        assert done.code == 0, done.err
        assert f"binding for process {pid} written to {path}" in done.out
        return path

    return issue


def send_as_bound(root: Path, binding: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``mailslot send`` in a process this test process (the launcher) starts."""
    return subprocess.run([sys.executable, "-m", "mailslot", "send", "--to", "claude",
                           "--subject", "hi", "--body", "from the child"],
                          env={**os.environ, "MAILSLOT_BINDING": str(binding), **env},
                          capture_output=True, text=True, timeout=60, check=False)


def test_a_launcher_hands_a_child_its_identity_with_one_variable(
        bound: Callable[[int], Path], root: Path, cli: Callable[..., Result],
        monkeypatch: pytest.MonkeyPatch) -> None:
    binding = bound(os.getpid())  # this test process is the launcher
    data = json.loads(binding.read_text())
    assert binding.stat().st_mode & 0o777 == 0o600
    assert data["agent"] == "tester" and data["bound_to"]["pid"] == os.getpid()
    done = send_as_bound(root, binding)
    assert done.returncode == 0, done.stderr
    [mail] = FileStore(root).entries("claude", ["unread"])
    assert "_tester_to_claude_" in mail[0]
    # a binding outranks a credential the child inherited; --credential outranks both
    other = tmp_credential(cli, root)
    assert send_as_bound(root, binding, MAILSLOT_CREDENTIAL=str(other)).returncode == 0
    assert len(FileStore(root).entries("claude", ["unread"])) == 2
    monkeypatch.setenv("MAILSLOT_BINDING", str(binding))
    shown = cli("--credential", str(other), "whoami", "--json")
    assert json.loads(shown.out)["name"] == "gemini"


def tmp_credential(cli: Callable[..., Result], root: Path) -> Path:
    path = root.parent / "gemini.json"
    assert cli("agent", "add", "gemini", "--credential-file", str(path), "--yes").code == 0
    return path


def test_a_binding_holds_only_under_its_launcher_while_it_runs(
        bound: Callable[[int], Path], root: Path) -> None:
    launcher = sleeper()
    try:
        binding = bound(launcher.pid)
        with pytest.raises(Unauthorized, match=f"is for process {launcher.pid} and what it "
                                               "starts; this process is not one of them"):
            read_binding(str(binding))
        done = send_as_bound(root, binding)  # started by this process, not the launcher
        assert done.returncode == 1 and "this process is not one of them" in done.stderr
    finally:
        ended(launcher)
    with pytest.raises(Unauthorized, match=f"was for process {launcher.pid}, which has ended"):
        read_binding(str(binding))
    assert FileStore(root).entries("claude", ["unread"]) == []


@pytest.mark.parametrize(("spoil", "said"), [
    ("mode 640", "open to other users"),
    ("mode 400", "is mode 400, not 600"),
    ("a link", "cannot read the binding"),
    ("a fifo", "not a regular file"),
    ("in a checkout", "inside the git checkout"),
    ("a credential file", "is not a binding mailslot wrote"),
    ("a reused launcher pid", "which has ended"),
])
def test_a_binding_that_is_not_private_and_bound_is_refused(
        bound: Callable[[int], Path], tmp_path: Path, spoil: str, said: str) -> None:
    binding = bound(os.getpid())
    data = json.loads(binding.read_text())
    target = binding
    if spoil == "mode 640":
        binding.chmod(0o640)
    elif spoil == "mode 400":
        binding.chmod(0o400)
    elif spoil == "a link":
        target = tmp_path / "link.json"
        target.symlink_to(binding)
    elif spoil == "a fifo":
        target = tmp_path / "fifo.json"
        os.mkfifo(target, 0o600)
    elif spoil == "in a checkout":
        subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True)
        target = tmp_path / "repo" / "binding.json"
        target.write_text(binding.read_text())
        target.chmod(0o600)
    elif spoil == "a credential file":
        del data["bound_to"]
        binding.write_text(json.dumps(data))
    elif spoil == "a reused launcher pid":  # the pid lives, but not the launcher's start
        data["bound_to"]["start"] = "1"
        binding.write_text(json.dumps(data))
    with pytest.raises((InvalidInput, Unauthorized), match=said):
        read_binding(str(target))


def test_a_binding_for_no_running_process_is_never_written(
        cli: Callable[..., Result], root: Path, tmp_path: Path) -> None:
    gone = sleeper()
    ended(gone)
    path = tmp_path / "run" / "tester.json"
    done = cli("agent", "add", "tester", "--credential-file", str(path),
               "--bind-to", str(gone.pid), "--yes")
    assert done.code == 2 and f"--bind-to {gone.pid} is not a running process" in done.err
    assert not path.exists() and FileStore(root).registered("tester") is None


def test_a_watcher_a_bound_child_starts_does_not_take_its_binding(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The watcher runs detached, under no launcher: the binding would refuse it, and it
    speaks for the mailbox, not for the child that happened to start it."""
    from mailslot.mail import watchers

    seen: list[dict[str, str]] = []
    monkeypatch.setattr(watchers, "spawn", lambda argv, env, log: seen.append(env))
    env = {**os.environ, "MAILSLOT_BINDING": "/run/tester.json",
           "MAILSLOT_CREDENTIAL": "/run/c.json"}
    assert watchers.start(FileStore(root), env) is None
    [given] = seen
    assert "MAILSLOT_BINDING" not in given and "MAILSLOT_CREDENTIAL" not in given
