"""``mailslot web`` over HTTP: who may use it and what every answer carries.

A real server process, spoken to with ``http.client`` so a test can send what a browser
never would (a forged Host, no token, a huge body). The browser itself is in
``test_web_browser.py``.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest

from mailslot import FileStore, Mailbox
from mailslot.access.identity import Identity
from mailslot.frontends.web.security import MAX_BODY
from support import put_config, snapshot
from webserver import WebServer, web_server


@pytest.fixture
def server(root: Path) -> Iterator[WebServer]:
    store = FileStore(root)
    put_config(store, {"owner": "sarah", "agents": {"gemini": {"wake_on_mail": False}}})
    Mailbox(store, Identity("claude", "--agent")).send("sarah", "hello", "hi", new=True)
    with web_server() as running:
        yield running


def request(server: WebServer, method: str, path: str, *, body: bytes | None = None,
            headers: dict[str, str] | None = None, host: str | None = None
            ) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    sent = {"Host": f"127.0.0.1:{server.port}" if host is None else host, **(headers or {})}
    connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    for key, value in sent.items():
        connection.putheader(key, value)
    if body is not None and "Content-Length" not in sent:
        connection.putheader("Content-Length", str(len(body)))
    connection.endheaders(body)
    response = connection.getresponse()
    response.read()
    connection.close()
    return response


def login(server: WebServer) -> str:
    """Exchange the one-time token; returns the ``Cookie`` header value."""
    response = request(server, "GET", server.login.split(str(server.port), 1)[1])
    assert response.status == 303
    cookie = response.getheader("set-cookie") or ""
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    return cookie.split(";", 1)[0]


def page(server: WebServer, cookie: str, path: str) -> str:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.request("GET", path, headers={"Cookie": cookie})
    response = connection.getresponse()
    assert response.status == 200, path
    html = response.read().decode()
    connection.close()
    return html


def csrf_of(html: str) -> str:
    return html.split('name="csrf" value="', 1)[1].split('"', 1)[0]


def test_the_token_works_once_and_gives_an_httponly_strict_cookie(server: WebServer) -> None:
    cookie = login(server)
    again = request(server, "GET", server.login.split(str(server.port), 1)[1])
    assert again.status == 403  # used up: another local user cannot replay it
    reopened = request(server, "GET", server.login.split(str(server.port), 1)[1],
                       headers={"Cookie": cookie})
    assert (reopened.status, reopened.getheader("location")) == (303, "/")
    assert "hello" in page(server, cookie, "/mail/sarah")


def test_no_session_is_refused_everywhere_but_the_exchange(server: WebServer) -> None:
    for path in ("/", "/settings", "/mail/sarah", "/events", "/compose"):
        assert request(server, "GET", path).status == 401, path
    assert request(server, "GET", "/", headers={"Cookie": "mailslot_session=guess"}).status == 401
    assert request(server, "GET", "/static/app.css").status == 200


def test_a_wrong_host_is_refused_even_with_a_session(server: WebServer) -> None:
    cookie = login(server)
    for host in ("evil.example", f"evil.example:{server.port}", "127.0.0.1:1",
                 f"[::1]:{server.port}", ""):
        response = request(server, "GET", "/", headers={"Cookie": cookie}, host=host)
        assert response.status == 421, host
    assert request(server, "GET", "/", headers={"Cookie": cookie},
                   host=f"localhost:{server.port}").status == 200


def test_changes_need_the_csrf_token_and_a_same_origin(server: WebServer, root: Path) -> None:
    cookie = login(server)
    token = csrf_of(page(server, cookie, "/compose"))
    before = snapshot(root / "agents")
    form = {"to": "gemini", "subject": "forged", "body": "x"}
    kinds = {"Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"}
    refused = [
        request(server, "POST", "/compose", body=urlencode(form).encode(), headers=kinds),
        request(server, "POST", "/compose", headers=kinds,
                body=urlencode({**form, "csrf": "wrong"}).encode()),
        request(server, "POST", "/compose", body=urlencode({**form, "csrf": token}).encode(),
                headers={**kinds, "Origin": "http://evil.example"}),
        request(server, "POST", "/compose", body=urlencode({**form, "csrf": token}).encode(),
                headers={**kinds, "Sec-Fetch-Site": "cross-site"}),
        request(server, "POST", "/compose", body=json.dumps({**form, "csrf": token}).encode(),
                headers={**kinds, "Content-Type": "application/json"}),
    ]
    assert [r.status for r in refused] == [403, 403, 403, 403, 400]
    assert snapshot(root / "agents") == before  # nothing was sent
    sent = request(server, "POST", "/compose", body=urlencode({**form, "csrf": token}).encode(),
                   headers={**kinds, "Origin": f"http://127.0.0.1:{server.port}"})
    assert sent.status == 303
    assert len(list((root / "agents" / "gemini" / "new").iterdir())) == 1


def test_large_bodies_other_methods_and_cors_are_refused(server: WebServer) -> None:
    cookie = login(server)
    huge = request(server, "POST", "/compose", body=b"x",
                   headers={"Cookie": cookie, "Content-Length": str(10**9)})
    assert huge.status == 413
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as raw:
        raw.sendall(f"POST /compose HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                    f"Cookie: {cookie}\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n".encode())
        chunk = b"x" * (MAX_BODY + 1)  # one chunk past the limit, then wait for the answer
        raw.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        answer = raw.recv(200)
        assert answer.startswith(b"HTTP/1.1 413"), answer
    for method in ("PUT", "DELETE", "OPTIONS", "PATCH"):
        response = request(server, method, "/", headers={
            "Cookie": cookie, "Origin": "http://evil.example",
            "Access-Control-Request-Method": "POST"})
        assert response.status == 405, method
        assert not any(k.lower().startswith("access-control-") for k, _ in response.getheaders())


def test_every_answer_carries_a_strict_policy(server: WebServer) -> None:
    cookie = login(server)
    for path in ("/", "/static/app.js", "/nowhere"):
        response = request(server, "GET", path, headers={"Cookie": cookie})
        csp = response.getheader("content-security-policy") or ""
        assert "default-src 'none'" in csp and "script-src 'self'" in csp, path
        assert "unsafe-inline" not in csp
        assert response.getheader("x-frame-options") == "DENY"
        assert response.getheader("referrer-policy") == "same-origin"
        assert response.getheader("x-content-type-options") == "nosniff"
    assert request(server, "GET", "/", host="evil.example").getheader(
        "content-security-policy")


def test_only_loopback_and_a_busy_port_falls_back(root: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        busy = taken.getsockname()[1]
        with web_server("--port", str(busy)) as running:
            assert running.port != busy
            assert any(f"port {busy} is busy" in line for line in running.lines)
            assert running.base.startswith("http://127.0.0.1:")


def test_ctrl_c_stops_it_with_an_event_stream_open(server: WebServer) -> None:
    cookie = login(server)
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as stream:
        stream.sendall(f"GET /events HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                       f"Cookie: {cookie}\r\n\r\n".encode())
        seen = b""
        while b"retry:" not in seen:
            chunk = stream.recv(4096)
            assert chunk, seen
            seen += chunk
        assert b"200 OK" in seen and b"text/event-stream" in seen
        assert server.stop() in (0, 130)  # ended by Ctrl-C, not killed
    assert not [line for line in server.lines if "ERROR" in line or "Traceback" in line]


def test_live_updates_come_by_events_where_the_store_can_tell(server: WebServer) -> None:
    """The file store can watch its folders here (inotify): the page's event stream must
    say it is fed by that watch, not by the slower polling a store that cannot tell
    falls back to."""
    cookie = login(server)
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as stream:
        stream.sendall(f"GET /events HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                       f"Cookie: {cookie}\r\n\r\n".encode())
        seen = b""
        while b"\n" not in seen.partition(b": live: ")[2]:  # its whole line
            chunk = stream.recv(4096)
            assert chunk, seen
            seen += chunk
    assert b"\n: live: watching every mailbox (inotify events)\n" in seen, seen


def test_the_overview_shows_gates_and_notifiers(root: Path) -> None:
    """Gates and notifiers on the page: a gated inbox is tagged, each agent's notifiers named."""
    store = FileStore(root)
    put_config(store, {"owner": "sarah", "agents": {
        "gemini": {"notify": [{"kind": "bank"}, {"kind": "desktop"}]}}})
    gemini = Mailbox(store, Identity("gemini", "--agent"))
    gemini.send("sarah", "hello", "hi", new=True)
    gemini.gate.switch(True)
    with web_server() as running:
        html = page(running, login(running), "/")
    row = html.split('<th scope="row"><a href="/mail/gemini"', 1)[1].split("</tr>", 1)[0]
    assert ">gated</span>" in row and "bank, desktop" in row
    sarah = html.split('<th scope="row"><a href="/mail/sarah"', 1)[1].split("</tr>", 1)[0]
    assert ">gated</span>" not in sarah and ">none</span>" in sarah


def test_search_is_a_plain_form_over_the_owners_mail_only(root: Path) -> None:
    """``/search`` needs no script (a GET form) and finds only what the owner may read."""
    store = FileStore(root)
    put_config(store, {"owner": "sarah"})
    claude = Mailbox(store, Identity("claude", "--agent"))
    claude.send("sarah", "Migration plan", "the database migration runs at noon")
    claude.send("gemini", "Private migration notes", "the database migration is gemini's")
    claude.broadcast("Freeze", "no database migration after six")
    with web_server() as running:
        cookie = login(running)
        empty = page(running, cookie, "/search")
        assert '<form method="get" action="/search"' in empty and "found" not in empty
        html = page(running, cookie, "/search?" + urlencode({"q": "database migration"}))
        assert "Migration plan" in html and "Freeze" in html
        assert "Private migration notes" not in html  # gemini's mail, not the owner's
        assert "2 found" in html
        html = page(running, cookie, "/search?" + urlencode({"q": "migration",
                                                              "state": "done"}))
        assert "0 found" in html and "Nothing matches." in html
        bad = request(running, "GET", "/search?" + urlencode({"q": "NOT"}),
                      headers={"Cookie": cookie})
        assert bad.status == 400


def test_a_gate_changes_from_a_plain_form_with_the_token_only(root: Path) -> None:
    store = FileStore(root)
    put_config(store, {"owner": "sarah", "agents": {"gemini": {}}})
    with web_server() as running:
        cookie = login(running)
        token = csrf_of(page(running, cookie, "/settings"))
        kinds = {"Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"}
        forged = request(running, "POST", "/settings/gate/gemini", headers=kinds,
                         body=urlencode({"action": "on"}).encode())
        assert forged.status == 403 and store.accept_of("gemini") == "open"
        for form in ({"action": "on"}, {"action": "admit", "name": "codex"}):
            done = request(running, "POST", "/settings/gate/gemini", headers=kinds,
                           body=urlencode({**form, "csrf": token}).encode())
            assert done.status == 303
        assert (store.accept_of("gemini"), store.members("gemini")) == ("members", ["codex"])
        html = page(running, cookie, "/settings")
        card = html.split('id="gate-gemini"', 1)[1].split('class="card gate"', 1)[0]
        assert "gated (members only)" in card and "<span>codex</span>" in card
        refused = request(running, "POST", "/settings/gate/gemini", headers=kinds,
                          body=urlencode({"action": "admit", "name": "../x",
                                          "csrf": token}).encode())
        assert refused.status == 400 and store.members("gemini") == ["codex"]


def test_the_overview_says_whether_a_watcher_runs(server: WebServer, root: Path) -> None:
    from mailslot.mail import watchers

    cookie = login(server)
    assert 'id="watcher"' not in page(server, cookie, "/")  # no agent has a wake
    store = FileStore(root)
    put_config(store, {"owner": "sarah", "agents": {"gemini": {
        "wake_on_mail": True, "wake_method": "command", "command": ["true"]}}})
    assert "none running here: agents have wakes, and the next send" in page(server, cookie,
                                                                            "/")
    holder = watchers.hold(store, "foreground")
    assert holder is not None
    try:
        html = page(server, cookie, "/")
        assert f"running here (foreground, pid {os.getpid()} on {os.uname().nodename}" in html
    finally:
        holder.release()


def test_the_owner_pauses_and_resumes_agents_from_the_settings_page(root: Path) -> None:
    """The loop governor's switch: a form with the token, the same as mailslot pause."""
    store = FileStore(root)
    put_config(store, {"owner": "sarah", "agents": {"gemini": {}}})
    with web_server() as running:
        cookie = login(running)
        html = page(running, cookie, "/settings")
        assert "No agent is paused." in html
        token = csrf_of(html)
        kinds = {"Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"}
        forged = request(running, "POST", "/settings/pause", headers=kinds,
                         body=urlencode({"action": "pause", "agent": "gemini"}).encode())
        assert forged.status == 403
        done = request(running, "POST", "/settings/pause", headers=kinds,
                       body=urlencode({"action": "pause", "agent": "gemini",
                                       "csrf": token}).encode())
        assert done.status == 303
        assert store.load_config()["governor"]["paused"] == ["gemini"]
        html = page(running, cookie, "/settings")
        assert "Paused: gemini." in html and 'aria-label="Resume gemini"' in html
        request(running, "POST", "/settings/pause", headers=kinds,
                body=urlencode({"action": "pause", "agent": "", "csrf": token}).encode())
        assert "Every agent is paused." in page(running, cookie, "/settings")
        request(running, "POST", "/settings/pause", headers=kinds,
                body=urlencode({"action": "resume", "agent": "", "csrf": token}).encode())
        assert store.load_config()["governor"]["paused"] == []
        bad = request(running, "POST", "/settings/pause", headers=kinds,
                      body=urlencode({"action": "pause", "agent": "../x",
                                      "csrf": token}).encode())
        assert bad.status == 400


def post_form(server: WebServer, cookie: str, path: str, form: dict[str, str]
              ) -> tuple[int, str]:
    """A form sent as the page sends it (with this session's token): status and page."""
    token = csrf_of(page(server, cookie, "/compose"))
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.request("POST", path, body=urlencode({**form, "csrf": token}),
                       headers={"Cookie": cookie,
                                "Content-Type": "application/x-www-form-urlencoded"})
    response = connection.getresponse()
    html = response.read().decode()
    connection.close()
    return response.status, html


def test_with_no_owner_the_page_says_settings_work_and_how_to_send(root: Path) -> None:
    """Without an owner the service lets the person at the page change settings, not
    send as anyone: the header says so (never "read only"), and every place that
    needs an owner names the command that sets one."""
    store = FileStore(root)
    put_config(store, {"agents": {"gemini": {}}})
    Mailbox(store, Identity("claude", "--agent")).send("gemini", "hi", "x", new=True)
    how = "mailslot config set owner NAME"
    with web_server() as running:
        cookie = login(running)
        overview = page(running, cookie, "/")
        assert "no owner: settings only" in overview and how in overview
        assert "read only" not in overview
        for path in ("/compose", "/search"):
            html = page(running, cookie, path)
            assert how in html and "in config.json" not in html, path
        gated, _ = post_form(running, cookie, "/settings/gate/gemini", {"action": "on"})
        assert gated == 303 and store.accept_of("gemini") == "members"  # settings work
        status, html = post_form(running, cookie, "/compose",
                                 {"to": "gemini", "subject": "s", "body": "b"})
        assert status == 400 and how in html and "config.json" not in html


def test_a_probable_typo_names_the_forms_own_way_to_send_anyway(server: WebServer,
                                                                root: Path) -> None:
    cookie = login(server)
    box = "send anyway to a new agent"
    form = page(server, cookie, "/compose").split('name="new"', 1)[1]
    assert form.split("</label>", 1)[0].endswith(f"> {box} (a name close to a known one "
                                                 "makes a new mailbox)")
    typo = {"to": "gemnii", "subject": "s", "body": "b"}
    status, html = post_form(server, cookie, "/compose", typo)
    assert status == 400 and "did you mean gemini?" in html
    assert f"tick “{box}”" in html and "--new" not in html and "new=true" not in html
    status, _ = post_form(server, cookie, "/compose", {**typo, "new": "on"})
    assert status == 303 and len(list((root / "agents" / "gemnii" / "new").iterdir())) == 1


def test_the_stats_page_shows_each_steps_times(root: Path) -> None:
    """``/stats``: ``mailslot stats`` on the page, every agent's mail (the owner's view)."""
    store = FileStore(root)
    put_config(store, {"owner": "sarah"})
    sent = Mailbox(store, Identity("claude", "--agent")).send("gemini", "Plan", "go", new=True)
    Mailbox(store, Identity("gemini", "--agent")).read(sent.id)
    with web_server() as running:
        cookie = login(running)
        html = page(running, cookie, "/stats")
        row = html.split('<th scope="row"><a href="/mail/gemini">gemini</a></th>', 1)[1]
        assert "<td>to read</td>" in row.split("</tr>", 1)[0]
        assert "No mail was delivered" in page(running, cookie, "/stats?since=2099-01-01")
        bad = request(running, "GET", "/stats?since=nope", headers={"Cookie": cookie})
        assert bad.status == 400
