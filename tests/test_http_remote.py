"""The JSON API of ``serve --http`` through its real clients: ``mailslot hook … --remote``
(a separate process, as a host runs it) and the everyday commands with ``--remote``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conftest import Result
from httpkit import Running, start
from mailslot import authority
from mailslot.errors import InvalidInput
from mailslot.remote_client import Remote, read_secret


@pytest.fixture
def running(root: Path) -> Iterator[Running]:
    yield from start(root)


def hook(running: Running, credential: str, event: str, payload: dict[str, object],
         host: str = "claude") -> str:
    """Run the remote hook as a host would: a new process, JSON on stdin."""
    env = {k: v for k, v in os.environ.items() if k != "MAILSLOT_DIR"}
    done = subprocess.run(
        [sys.executable, "-m", "mailslot", "hook", host, event, "--remote",
         f"http://127.0.0.1:{running.port}", "--credential", credential],
        input=json.dumps(payload), capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0
    return done.stdout


def context(out: str) -> str:
    if out in ("", "{}"):
        return ""
    return str(json.loads(out)["hookSpecificOutput"]["additionalContext"])


def test_remote_hook_shows_mail_then_records_it(
        running: Running) -> None:
    first = running.box("claude").send("gemini", "schema", "ready for review")
    cast = running.box("claude").broadcast("freeze", "main is frozen")
    secret = running.files["gemini"]
    out = hook(running, secret, "session-start",
                     {"session_id": "abc", "hook_event_name": "SessionStart",
                      "source": "startup"})
    shown = context(out)
    assert first.id in shown and cast.id in shown and "> ready for review" in shown
    # shown at all means it finished inside the hook's 3-second bound, which ends the
    # process (exit 0, nothing printed) however it is stuck
    # the prompt hook of the same session has nothing new; the broadcast is served once
    again = hook(running, secret, "user-prompt-submit",
                    {"session_id": "abc", "hook_event_name": "UserPromptSubmit",
                     "prompt": "hi"})
    assert context(again) == ""
    fresh = hook(running, secret, "session-start",
                    {"session_id": "other", "hook_event_name": "SessionStart"})
    assert first.id in context(fresh) and cast.id not in context(fresh)
    # issue 12: both host sessions are sessions of gemini, named by the host
    hooked = {s["session"]: s["program"] for s in running.box("gemini").sessions("gemini")
              if s["kind"] == "hook"}
    assert hooked == {"abc": "claude", "other": "claude"}


def test_remote_hook_never_fails_a_session(running: Running, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.credential"
    held = json.loads(Path(running.files["gemini"]).read_text())
    wrong.write_text(json.dumps({**held, "secret": "x" + held["secret"]}))
    wrong.chmod(0o600)
    for secret in (str(wrong), "/no/such/file"):
        out = hook(running, secret, "session-start", {"session_id": "abc"})
        assert out in ("", "{}")
    nowhere = Running("http://127.0.0.1:9/mcp", 9, running.store, {})
    out = hook(nowhere, running.files["gemini"], "session-start", {"session_id": "abc"})
    assert out in ("", "{}")


def test_remote_cli_everyday_commands(
        running: Running, cli: Callable[..., Result], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAILSLOT_DIR", str(tmp_path / "elsewhere"))  # another machine's
    url = f"http://127.0.0.1:{running.port}"
    claude = ["--remote", url, "--credential", running.files["claude"]]
    gemini = ["--remote", url, "--credential", running.files["gemini"]]
    sent = cli("send", "--to", "gemini", "--subject", "hello", "--body", "from afar",
               "--json", *claude)
    assert sent.code == 0, sent.err
    message = json.loads(sent.out)
    assert message["from"] == "claude"
    listed = cli("inbox", *gemini)
    assert "hello" in listed.out and "claude" in listed.out
    read = cli("read", message["id"], "--json", *gemini)
    assert json.loads(read.out)["body"] == "from afar"
    assert json.loads(read.out)["state"] == "read"
    replied = cli("reply", message["id"], "--body", "thanks", *gemini)
    assert replied.code == 0 and "sent " in replied.out
    assert running.box("gemini").read(message["id"]).state == "done"
    back = json.loads(cli("inbox", "--json", *claude).out)
    assert [m["subject"] for m in back] == ["Re: hello"]
    done = cli("done", back[0]["id"], *claude)
    assert done.code == 0 and back[0]["id"] in done.out


def test_remote_reply_subject_and_done_all(
        running: Running, cli: Callable[..., Result], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAILSLOT_DIR", str(tmp_path / "elsewhere"))
    gemini = ["--remote", f"http://127.0.0.1:{running.port}", "--credential",
              running.files["gemini"]]
    first = running.box("claude").send("gemini", "one", "b")
    running.box("claude").send("gemini", "two", "b")
    replied = cli("reply", first.id, "--subject", "Plan B", "--body", "b", "--json", *gemini)
    assert replied.code == 0 and json.loads(replied.out)["subject"] == "Plan B"
    both = cli("done", "--all", first.id, *gemini)
    assert both.code == 2 and "not both" in both.err
    done = cli("done", "--all", "--json", *gemini)
    assert done.code == 0 and [i["subject"] for i in json.loads(done.out)] == ["two"]
    assert running.box("gemini").inbox() == []
    api = Remote(running.url, running.secret("gemini"))
    with pytest.raises(InvalidInput, match="send takes no 'from': you send as gemini"):
        api.post("send", {"to": "claude", "subject": "s", "body": "b", "from": "claude"})


def test_a_page_after_a_prefix_names_no_one_elses_mail(running: Running) -> None:
    others = [running.box("claude").send("helper", f"private {n}", "b") for n in range(2)]
    mine = running.box("claude").send("gemini", "for gemini", "b")
    api = Remote(running.url, running.secret("gemini"))
    # the date part names exactly one message among gemini's own: the page before it
    page = api.get("inbox", **{"for": "gemini", "before": others[0].id[:10]})
    assert page["items"] == [] and others[0].id[:10] == mine.id[:10]


def test_remote_cli_errors_keep_their_exit_codes(
        running: Running, cli: Callable[..., Result]) -> None:
    url = f"http://127.0.0.1:{running.port}"
    me = ["--remote", url, "--credential", running.files["claude"]]
    missing = cli("read", "2026-01-01_000000.000000_a_to_b_deadbeef", *me)
    assert missing.code == 1 and "mailslot: error:" in missing.err
    bad = cli("send", "--to", "ALL", "--subject", "x", "--body", "y", *me)
    assert bad.code == 2
    secret = running.secret("claude")
    new = Path(running.files["claude"]).parent / "rotated.credential"
    authority.rotate(running.store, "claude", path=str(new))
    refused = cli("inbox", *me)
    assert refused.code == 1
    assert "refused the credential" in refused.err
    assert secret not in refused.err


def test_api_checks_what_it_records(running: Running) -> None:
    api = Remote(running.url, running.secret("gemini"))
    with pytest.raises(InvalidInput):
        api.post("seen", {"moment": "start", "session": "a", "shown": ["../../etc"]})
    with pytest.raises(InvalidInput):
        api.post("seen", {"moment": "later", "shown": []})
    with pytest.raises(InvalidInput):
        api.get("pending", moment="start", limit="many")


def test_secret_from_file_or_environment(tmp_path: Path) -> None:
    assert read_secret(None, {"MAILSLOT_SECRET": " s3 "}) == "s3"
    with pytest.raises(InvalidInput, match="MAILSLOT_SECRET"):
        read_secret(None, {})
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    bad.chmod(0o600)
    with pytest.raises(InvalidInput, match="not a mailslot credential"):
        read_secret(str(bad), {})
    with pytest.raises(InvalidInput):
        Remote("ftp://x", "s")
