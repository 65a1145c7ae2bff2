"""The JSON API of ``serve --http`` through its real clients: ``mailslot hook … --remote``
(a separate process, as a host runs it) and the everyday commands with ``--remote``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx2
import pytest

from conftest import Result
from httpkit import Running, start
from mailslot.access import authority
from mailslot.core.errors import InvalidInput
from mailslot.frontends.http.client import Remote, read_secret


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
    # Both host sessions are sessions of gemini, named by the host
    hooked = {s["session"]: s["program"] for s in running.box("gemini").sessions("gemini")
              if s["kind"] == "hook"}
    assert hooked == {"abc": "claude", "other": "claude"}


def test_a_remote_session_is_not_injected_later_what_it_was_told_of(
        running: Running) -> None:
    """What did not fit a remote session start's budget is counted there, and recorded so:
    the next prompt of that session injects nothing (docs/hooks.md, "Each message once")."""
    for n in range(40):
        running.box("claude").send("gemini", f"note {n}", "x" * 400)
    secret = running.files["gemini"]
    shown = context(hook(running, secret, "session-start",
                         {"session_id": "abc", "hook_event_name": "SessionStart"}))
    assert "older ones are not shown" in shown and len(shown.encode()) <= 6144
    again = hook(running, secret, "user-prompt-submit",
                 {"session_id": "abc", "hook_event_name": "UserPromptSubmit", "prompt": "hi"})
    assert context(again) == ""


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


def test_api_refuses_values_of_the_wrong_type(running: Running) -> None:
    """A field of the wrong JSON type is a 422 naming the field, and nothing is stored:
    never a 500, a subject stored as Python's repr, or a string taken letter by letter."""
    auth = {"authorization": f"Bearer {running.secret('claude')}"}
    base = f"http://127.0.0.1:{running.port}/api/"
    kept = running.box("gemini").send("claude", "keep", "me")
    for route, body, field in (
        ("send", {"to": 5, "subject": "s", "body": "b"}, "to"),
        ("send", {"to": ["gemini", 7], "subject": "s", "body": "b"}, "to"),
        ("send", {"to": "gemini", "subject": ["a", "b"], "body": "b"}, "subject"),
        ("send", {"to": "gemini", "subject": "s", "body": {"x": 1}}, "body"),
        ("send", {"to": "gemini", "subject": "s", "body": "b", "re_issue": 3}, "re_issue"),
        ("done", {"ids": kept.id}, "ids"),
        ("done", {"ids": [kept.id, 5]}, "ids"),
        ("read", {"id": [kept.id]}, "id"),
        ("reply", {"id": kept.id, "body": 5}, "body"),
    ):
        answer = httpx2.post(base + route, json=body, headers=auth, timeout=30)
        assert answer.status_code == 422, (route, body, answer.text)
        assert answer.json()["kind"] == "invalid" and field in answer.json()["error"]
    assert running.box("gemini").page(None).items.unreadable == 0
    assert [i.message.subject for i in running.box("gemini").page(None).items] == []
    assert [i.state for i in running.box("claude").page(None).items] == ["unread"]


def test_an_over_limit_chunked_body_is_413(running: Running) -> None:
    """A body with no Content-Length (chunked) is stopped at the limit as it streams."""
    auth = {"authorization": f"Bearer {running.secret('claude')}"}

    def chunks() -> Iterator[bytes]:
        yield b'{"to": "gemini", "subject": "s", "body": "'
        for _ in range(100):
            yield b"x" * 1024
        yield b'"}'

    answer = httpx2.post(f"http://127.0.0.1:{running.port}/api/send", content=chunks(),
                         headers={**auth, "content-type": "application/json"}, timeout=30)
    assert answer.status_code == 413 and "too large" in answer.json()["error"]
    assert running.box("gemini").page(None).items == []


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


class _Recorder(BaseHTTPRequestHandler):
    """Answers every request as ``answer`` says and keeps the headers it was sent."""

    seen: list[dict[str, str]]
    answer: Callable[[BaseHTTPRequestHandler], None]

    def do_GET(self) -> None:
        self.seen.append({k.lower(): v for k, v in self.headers.items()})
        self.answer(self)

    do_POST = do_GET

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def recorder(answer: Callable[[BaseHTTPRequestHandler], None]
             ) -> Iterator[tuple[str, list[dict[str, str]]]]:
    """A plain HTTP server on a free loopback port: its URL and the headers it got."""
    seen: list[dict[str, str]] = []
    handler = type("Handler", (_Recorder,), {"seen": seen, "answer": staticmethod(answer)})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(30)


def test_a_redirect_is_never_followed_with_the_secret(
        cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that answers 307 (to another port here, another host in the wild) is
    not followed: the secret goes only to the URL given, and the command fails."""
    secret = "s3cr3t-that-must-stay-home"
    monkeypatch.setenv("MAILSLOT_SECRET", secret)

    def empty_inbox(h: BaseHTTPRequestHandler) -> None:
        data = json.dumps({"items": [], "more": False, "done_hidden": 0,
                           "unreadable": 0}).encode()
        h.send_response(200)
        h.send_header("content-type", "application/json")
        h.send_header("content-length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    with recorder(empty_inbox) as (elsewhere, stolen):
        def moved(h: BaseHTTPRequestHandler) -> None:
            h.send_response(307)
            h.send_header("location", f"{elsewhere}{h.path}")
            h.send_header("content-length", "0")
            h.end_headers()

        with recorder(moved) as (url, asked):
            for argv in (["inbox"], ["send", "--to", "gemini", "--subject", "s",
                                     "--body", "b"]):
                done = cli(*argv, "--remote", url)
                assert done.code == 1, done.err
                assert done.err.startswith("mailslot: error:") and "redirect" in done.err
                assert len(done.err.strip().splitlines()) == 1 and secret not in done.err
        assert [h.get("authorization") for h in asked] == [f"Bearer {secret}"] * 2
        assert stolen == []


def test_plain_http_only_to_loopback(cli: Callable[..., Result],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAILSLOT_SECRET", "s")
    for url in ("http://example.invalid", "http://example.invalid:8080/mcp",
                "http://10.1.2.3:8080", "http://127.0.0.1.example.invalid",
                "http://localhost.example.invalid"):
        done = cli("inbox", "--remote", url)
        assert done.code == 2 and done.err.startswith("mailslot: error:"), (url, done.err)
        assert "https://" in done.err and len(done.err.strip().splitlines()) == 1
    for url in ("http://127.0.0.1:1", "http://localhost:1", "http://[::1]:1",
                "https://example.invalid"):
        Remote(url, "s")  # allowed; nothing is connected until a call


def test_the_ladder_over_the_api(running: Running, cli: Callable[..., Result]) -> None:
    """A remote send asks for its notice; a remote hook's ``seen`` is its showing, and
    one whose output no host read (``taken`` false) records nothing."""
    url = f"http://127.0.0.1:{running.port}"
    sent = cli("send", "--to", "gemini", "--subject", "s", "--body", "b", "--notify-when",
               "surfaced", "--json", "--remote", url, "--credential", running.files["claude"])
    assert sent.code == 0, sent.err
    message_id = json.loads(sent.out)["id"]
    assert json.loads(sent.out)["notify_when"] == "surfaced"
    api = Remote(running.url, running.secret("gemini"))
    planned = api.get("pending", moment="start", session="r-1", host="claude")
    assert message_id in planned["shown"]
    seen = {k: planned[k] for k in ("moment", "session", "shown", "broadcasts")}
    api.post("seen", {**seen, "host": "claude", "taken": False})
    assert running.box("claude").status(message_id).recipients[0].rung == "stored"
    api.post("seen", {**seen, "host": "claude", "taken": True})
    ladder = running.box("claude").status(message_id).recipients[0]
    assert ladder.rung == "surfaced" and ladder.surfaced is not None
    assert (ladder.surfaced["host"], ladder.surfaced["session"]) == ("claude", "r-1")
    assert [i.message.sender for i in running.box("claude").inbox()] == ["mailslot"]
