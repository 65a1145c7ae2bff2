"""mailslot as an A2A client (``mailslot relay``): a local agent mails a remote A2A agent
the owner named, and gets its answer back as mail. The remote here is another mailbox's
``serve --http`` (a real A2A server, spoken to with the official SDK client)."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest

from httpkit import Running
from mailslot import FileStore, Mailbox
from mailslot.access.identity import Identity
from mailslot.core.errors import StoreError
from mailslot.frontends.a2a_relay import Relay, remotes
from mailslot.mail.watchers import wanted


@pytest.fixture
def local(tmp_path: Path, running: Running) -> FileStore:
    """A second mailbox whose owner named the remote's gemini ``reviewer``, reached with
    the remote's claude credential (a 0600 file)."""
    store = FileStore(tmp_path / "local")
    token = tmp_path / "reviewer.token"
    token.write_text(running.secret("claude"))
    token.chmod(0o600)
    base = running.url.removesuffix("/mcp")
    store.update_config(lambda c: c.update(a2a={"remotes": {"reviewer": {
        "url": f"{base}/a2a/gemini", "token_file": str(token)}}}) is None)
    return store


def relay_once(store: FileStore) -> int:
    return asyncio.run(Relay(store, io.StringIO()).step())


def test_mail_to_a_remote_is_sent_and_its_answer_comes_back_as_mail(
        local: FileStore, running: Running) -> None:
    ada = Mailbox(local, Identity("ada", "--agent"))
    asked = ada.send("reviewer", "review please", "the parser change", new=True)
    assert relay_once(local) == 1
    remote = running.box("gemini")
    [got] = list(remote.inbox())
    assert got.message.sender == "claude"
    assert remote.read(got.message.id, mark=False).message.body == "the parser change"
    assert got.message.subject == "review please"
    assert local.state_of("reviewer", asked.id) == "read"  # sent: the task is working
    assert relay_once(local) == 0  # nothing new: the remote has not answered
    remote.reply(got.message.id, "LGTM")
    assert relay_once(local) == 1
    [answer] = [i.message for i in ada.inbox()]
    assert (answer.sender, answer.in_reply_to) == ("reviewer", asked.id)
    assert ada.read(answer.id).message.body == "LGTM"
    assert local.state_of("reviewer", asked.id) == "done"
    assert relay_once(local) == 0  # answered once, never again


def test_a_refusal_comes_back_as_mail_saying_so(local: FileStore, running: Running) -> None:
    running.box("gemini").gate.switch(True)
    ada = Mailbox(local, Identity("ada", "--agent"))
    asked = ada.send("reviewer", "let me in", "please", new=True)
    assert relay_once(local) == 1
    [answer] = [i.message for i in ada.inbox()]
    assert answer.in_reply_to == asked.id
    body = ada.read(answer.id).message.body
    assert body.startswith("The remote A2A agent reviewer (")
    assert "ended the task rejected: gemini accepts mail only from" in body
    assert list(running.box("gemini").inbox()) == []


def test_a_relay_that_stopped_picks_up_its_tasks_again(local: FileStore,
                                                       running: Running) -> None:
    ada = Mailbox(local, Identity("ada", "--agent"))
    asked = ada.send("reviewer", "q", "anyone?", new=True)
    relay_once(local)
    [got] = list(running.box("gemini").inbox())
    running.box("gemini").reply(got.message.id, "here")
    assert relay_once(local) == 1  # a new relay: the task from the events log
    assert [i.message.in_reply_to for i in ada.inbox()] == [asked.id]


def test_the_remotes_setting_fails_closed(tmp_path: Path) -> None:
    assert wanted({"a2a": {"remotes": {"r": {}}}})
    for bad in ({"a2a": {"remotes": []}}, {"a2a": {"remotes": {"R!": {}}}},
                {"a2a": {"remotes": {"r": {"url": "file:///x", "token_file": "t"}}}},
                {"a2a": {"remotes": {"r": {"url": "https://x"}}}}):
        with pytest.raises(StoreError, match=r"a2a\.remotes"):
            remotes(bad)
    token = tmp_path / "t"
    token.write_text(json.dumps({"secret": "s3"}))
    token.chmod(0o644)  # others may read it: refused
    [remote] = remotes({"a2a": {"remotes": {"r": {"url": "https://x",
                                                  "token_file": str(token)}}}})
    with pytest.raises(StoreError, match="token_file"):
        remote.secret()
    token.chmod(0o600)
    assert remote.secret() == "s3"
