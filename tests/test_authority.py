"""Bounded authority: registered agents, credentials and child agents, through
the service and the real CLI entry point."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import Result
from mailslot.access import authority
from mailslot.backends.files.file_store import FileStore
from mailslot.core.dates import UTC, datetime, timedelta
from mailslot.core.errors import InvalidInput, NotFound, Refused, Unauthorized
from mailslot.service.mailbox import Mailbox
from support import put_config

Run = Callable[..., Result]


@pytest.fixture
def creds(isolated: Path) -> Path:
    return isolated / "home" / ".config" / "mailslot" / "credentials"


def add(cli: Run, name: str, *extra: str) -> Result:
    result = cli("agent", "add", name, "--yes", *extra)
    assert result.code == 0, result.err
    return result


def as_cred(path: Path, **kw: str) -> Mailbox:
    return Mailbox.open(credential=str(path), **kw)  # type: ignore[arg-type]


def test_add_writes_a_private_credential_and_prints_no_secret(cli: Run, creds: Path,
                                                              root: Path) -> None:
    result = add(cli, "claude", "--runtime", "claude-code")
    path = creds / "claude.json"
    secret = json.loads(path.read_text())["secret"]
    assert path.stat().st_mode & 0o777 == 0o600
    assert str(path) in result.out and secret not in result.out + result.err
    record = FileStore(root).registered("claude")
    assert record is not None and record.runtime == "claude-code"
    assert secret not in (root / "registry" / "claude.json").read_text()
    listed = cli("agent", "list", "--json")
    assert [r["name"] for r in json.loads(listed.out)] == ["claude"]
    shown = cli("agent", "show", "claude", "--json")
    assert json.loads(shown.out)["generation"] == 1 and "hash" not in shown.out


def test_administration_needs_confirmation_off_a_terminal(cli: Run, root: Path) -> None:
    result = cli("agent", "add", "claude", stdin="")
    assert result.code == 2 and "--yes" in result.err
    assert FileStore(root).registered("claude") is None


def test_add_twice_and_unknown_names(cli: Run) -> None:
    add(cli, "claude")
    assert cli("agent", "add", "claude", "--yes").code == 1
    assert cli("agent", "rotate", "nobody", "--yes").code == 1
    assert cli("agent", "add", "child", "--parent", "nobody", "--yes").code == 1


def test_credential_binds_identity_and_store(cli: Run, creds: Path, root: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    add(cli, "claude")
    monkeypatch.delenv("MAILSLOT_DIR")  # the credential names its store
    box = as_cred(creds / "claude.json")
    assert box.agent == "claude" and box.store.location == str(root)
    message = box.send("gemini", "hi", "body", new=True)
    assert message.sender == "claude"
    with pytest.raises(InvalidInput, match="does not match"):
        Mailbox.open(agent="gemini", credential=str(creds / "claude.json"))


def test_rotated_and_revoked_credentials_are_refused_at_the_next_call(
        cli: Run, creds: Path, tmp_path: Path) -> None:
    add(cli, "claude")
    old = tmp_path / "old.json"
    old.write_bytes((creds / "claude.json").read_bytes())
    old.chmod(0o600)
    running = as_cred(old)
    assert running.bound_agent() == "claude"
    assert cli("agent", "rotate", "claude", "--yes").code == 0
    with pytest.raises(Unauthorized) as caught:
        as_cred(old).send("gemini", "s", "b", new=True)
    assert "rotated or revoked" in str(caught.value)
    as_cred(creds / "claude.json").send("gemini", "s", "b", new=True)
    assert cli("agent", "revoke", "claude", "--yes").code == 0
    with pytest.raises(Unauthorized):
        as_cred(creds / "claude.json").send("gemini", "s", "b", new=True)
    assert cli("agent", "rotate", "claude", "--yes").code == 1  # revoking is final


def test_a_wrong_secret_says_nothing_about_why(cli: Run, creds: Path) -> None:
    add(cli, "claude")
    path = creds / "claude.json"
    data = json.loads(path.read_text())
    data["secret"] = "x" * 43
    path.write_text(json.dumps(data))
    with pytest.raises(Unauthorized) as caught:
        as_cred(path).bound_agent()
    assert "wrong, rotated or revoked" in str(caught.value)


def test_registered_agent_cannot_be_spoken_for_without_its_credential(
        cli: Run, box: Callable[[str | None], Mailbox]) -> None:
    add(cli, "claude")
    with pytest.raises(Refused, match="registered agent"):
        box("claude").send("gemini", "s", "b", new=True)
    box("gemini").send("claude", "s", "b")  # unregistered agents keep working


def test_require_credentials_refuses_an_unregistered_writer(
        cli: Run, root: Path, creds: Path, box: Callable[[str | None], Mailbox]) -> None:
    add(cli, "claude")
    put_config(FileStore(root), {"require_credentials": True})
    with pytest.raises(Refused, match="requires credentials"):
        box("gemini").send("claude", "s", "b")
    as_cred(creds / "claude.json").send("gemini", "s", "b", new=True)
    assert cli("--agent", "gemini", "send", "--to", "claude", "--subject", "s",
               "--body", "b").code == 1
    put_config(FileStore(root), {"require_credentials": "yes"})
    with pytest.raises(Exception, match="require_credentials must be true or false"):
        box("gemini").send("claude", "s", "b")


# Child agents ------------------------------------------------------------------------
@pytest.fixture
def family(cli: Run, creds: Path, box: Callable[[str | None], Mailbox]) -> Path:
    add(cli, "claude")
    add(cli, "reviewer", "--parent", "claude")
    box("gemini").send("reviewer", "from a stranger", "hello", new=True)
    as_cred(creds / "claude.json").send("reviewer", "from the parent", "hello")
    return creds / "reviewer.json"


def test_child_sends_and_replies_only_to_its_parent(family: Path) -> None:
    child = as_cred(family)
    with pytest.raises(Refused, match="only to its parent"):
        child.send("gemini", "s", "b")
    with pytest.raises(Refused, match="only to its parent"):
        child.send(["claude", "gemini"], "s", "b")
    with pytest.raises(Refused, match="cannot broadcast"):
        child.broadcast("s", "b")
    items = {i.message.subject: i.message.id for i in child.inbox()}
    with pytest.raises(Refused, match="only to messages from its parent"):
        child.reply(items["from a stranger"], "no")
    child.reply(items["from the parent"], "yes")
    assert child.send("claude", "s", "b").to == ("claude",)


def test_child_reads_only_its_own_inbox(family: Path) -> None:
    child = as_cred(family)
    for other in ("claude", "all"):
        with pytest.raises(Refused, match="only its own inbox"):
            child.inbox(other)
    assert child.inbox("reviewer")


def test_rotating_or_revoking_the_parent_ends_the_child(cli: Run, family: Path) -> None:
    assert cli("agent", "rotate", "claude", "--yes").code == 0
    with pytest.raises(Unauthorized):
        as_cred(family).send("claude", "s", "b")
    assert cli("agent", "rotate", "reviewer", "--yes").code == 0  # re-issued
    as_cred(family).send("claude", "s", "b")
    assert cli("agent", "revoke", "claude", "--yes").code == 0
    with pytest.raises(Unauthorized):
        as_cred(family).send("claude", "s", "b")


def test_peer_of_applies_the_child_rules_without_registration(
        box: Callable[[str | None], Mailbox]) -> None:
    box("claude").send("helper", "task", "b", new=True)
    child = Mailbox.open(agent="helper", peer_of="claude")
    with pytest.raises(Refused, match="only to its parent"):
        child.send("gemini", "s", "b", new=True)
    child.send("claude", "s", "b")


def test_peer_of_from_the_cli_and_env(cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAILSLOT_PEER_OF", "claude")
    result = cli("--agent", "helper", "send", "--to", "gemini", "--subject", "s",
                 "--body", "b", "--new")
    assert result.code == 1 and "only to its parent" in result.err


def test_damaged_registration_fails_closed(cli: Run, root: Path, creds: Path,
                                           box: Callable[[str | None], Mailbox]) -> None:
    add(cli, "claude")
    (root / "registry" / "claude.json").write_text("{oops")
    with pytest.raises(Unauthorized):
        as_cred(creds / "claude.json").send("gemini", "s", "b", new=True)
    with pytest.raises(Refused):
        box("claude").send("gemini", "s", "b", new=True)


def test_credential_inside_a_checkout_is_refused_before_registering(
        cli: Run, root: Path, tmp_path: Path) -> None:
    import subprocess

    subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True)
    result = cli("agent", "add", "claude", "--yes", "--credential-file",
                 str(tmp_path / "repo" / "claude.json"))
    assert result.code == 2 and "inside the git checkout" in result.err
    assert FileStore(root).registered("claude") is None


def test_runtime_names(cli: Run, root: Path) -> None:
    assert cli("agent", "add", "a1", "--runtime", "bad runtime!", "--yes").code == 2
    add(cli, "a2", "--runtime", "Grok-CLI")
    assert authority.record(FileStore(root), "a2").runtime == "grok-cli"


def test_show_unknown(cli: Run) -> None:
    assert cli("init").code == 0
    result = cli("agent", "show", "nobody")
    assert result.code == 1 and "not a registered agent" in result.err
    with pytest.raises(NotFound):
        authority.record(FileStore("/nonexistent-mailbox"), "nobody")


# Lifetimes -------------------------------------------------------------------------------
def expire(root: Path, name: str, when: str = "2020-01-01T00:00:00+00:00") -> None:
    """Move ``name``'s expiry into the past, as time passing would."""
    from mailslot.core.values import replace

    store = FileStore(root)
    store.replace_registered(replace(authority.record(store, name), expires=when))


def moment(iso: str | None) -> datetime:
    assert iso is not None
    return datetime.fromisoformat(iso)


def test_a_child_expires_after_a_day_and_rotate_renews_it(cli: Run, root: Path,
                                                           creds: Path) -> None:
    add(cli, "claude")
    made = add(cli, "tester", "--parent", "claude")
    child = authority.record(FileStore(root), "tester")
    assert moment(child.expires) - moment(child.created) == timedelta(hours=24)
    assert f"it expires at {child.expires}" in made.out
    assert authority.record(FileStore(root), "claude").expires is None  # a parent: never
    as_cred(creds / "tester.json").send("claude", "s", "b")  # works until then
    expire(root, "tester")
    sent = cli("--credential", str(creds / "tester.json"), "send", "--to", "claude",
               "--subject", "s", "--body", "b")
    assert sent.code == 1
    assert sent.err.strip() == ("mailslot: error: child tester expired at "
                                "2020-01-01T00:00:00+00:00; mailslot agent rotate tester to "
                                "renew")
    assert len(FileStore(root).entries("claude", ["unread"])) == 1  # nothing more sent
    add_again = cli("agent", "rotate", "tester", "--yes")
    assert add_again.code == 0, add_again.err
    renewed = authority.record(FileStore(root), "tester")
    assert moment(renewed.expires) > datetime.now(UTC) + timedelta(hours=23)
    as_cred(creds / "tester.json").send("claude", "s2", "b")


def test_the_owner_chooses_a_lifetime_or_never(cli: Run, root: Path) -> None:
    add(cli, "claude")
    add(cli, "short", "--parent", "claude", "--expires", "8h")
    add(cli, "kept", "--parent", "claude", "--expires", "never")
    add(cli, "temp", "--expires", "2d")
    store = FileStore(root)
    short = authority.record(store, "short")
    assert moment(short.expires) - moment(short.created) == timedelta(hours=8)
    assert authority.record(store, "kept").expires is None
    temp = authority.record(store, "temp")
    assert moment(temp.expires) - moment(temp.created) == timedelta(days=2)
    for bad in ("8", "8y", "-1h", "0m", "400d", "soon"):
        refused = cli("agent", "add", "x", "--parent", "claude", f"--expires={bad}", "--yes")
        assert refused.code == 2 and "--expires must be" in refused.err, bad
    assert store.registered("x") is None
    # rotate keeps "never" for an agent that never expired, renews one that did
    cli("agent", "rotate", "claude", "--yes")
    assert authority.record(store, "claude").expires is None
    cli("agent", "rotate", "temp", "--yes")
    renewed = authority.record(store, "temp").expires
    assert moment(renewed) - datetime.now(UTC) <= timedelta(hours=24)
    cli("agent", "rotate", "kept", "--yes", "--expires", "30m")
    assert authority.record(store, "kept").expires is not None


def test_an_expired_parent_takes_its_children_with_it(cli: Run, root: Path,
                                                      creds: Path) -> None:
    add(cli, "claude", "--expires", "1h")
    add(cli, "tester", "--parent", "claude")
    expire(root, "claude")
    with pytest.raises(Unauthorized, match=re.escape(
            "child tester's parent claude expired at 2020-01-01T00:00:00+00:00; mailslot "
            "agent rotate claude to renew it, then mailslot agent rotate tester")):
        as_cred(creds / "tester.json").send("claude", "s", "b")
    with pytest.raises(Unauthorized, match="agent claude expired at"):
        as_cred(creds / "claude.json").send("tester", "s", "b")


def test_who_and_agent_list_show_when_a_credential_expires(cli: Run, root: Path) -> None:
    add(cli, "claude")
    add(cli, "tester", "--parent", "claude")
    add(cli, "old", "--parent", "claude")
    expire(root, "old")
    listed = {r["name"]: r for r in json.loads(cli("agent", "list", "--json").out)}
    tester = authority.record(FileStore(root), "tester")
    assert (listed["tester"]["expires"], listed["tester"]["expired"]) == (tester.expires, False)
    assert (listed["old"]["expired"], listed["claude"]["expires"]) == (True, None)
    text = cli("agent", "list").out
    assert "tester  generation 1  child of claude" in text and "  expires " in text
    assert "EXPIRED at 2020-01-01T00:00:00+00:00" in text
    who = {a["name"]: a for a in json.loads(cli("who", "--json").out)}
    assert (who["tester"]["expires"], who["tester"]["expired"]) == (tester.expires, False)
    assert who["old"]["expired"] is True and who["claude"]["expires"] is None
    shown = cli("who").out
    assert "old [expired 2020-01-01" in shown and "tester [expires " in shown


def test_a_registration_written_before_lifetimes_never_expires(cli: Run, root: Path,
                                                               creds: Path) -> None:
    add(cli, "claude")
    add(cli, "tester", "--parent", "claude")
    path = root / "registry" / "tester.json"
    older = json.loads(path.read_text())
    del older["expires"]
    path.write_text(json.dumps(older))
    assert authority.record(FileStore(root), "tester").expires is None
    as_cred(creds / "tester.json").send("claude", "s", "b")
    older["expires"] = "next tuesday"
    path.write_text(json.dumps(older))
    with pytest.raises(Unauthorized):  # an expiry that cannot be read: no authority
        as_cred(creds / "tester.json").send("claude", "s", "b")
