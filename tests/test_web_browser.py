"""``mailslot web`` in a real browser: Debian's chromium driven by Playwright.

Playwright's own browser download is not used (and not reachable here): the tests
launch the system's ``/usr/bin/chromium``. Every page is checked for CSP violations
and requests leaving the page's origin; hostile subjects and bodies must stay text.
The overview, thread and settings screenshots in docs/ come from these tests: set
``MAILSLOT_SCREENSHOTS=docs`` to write them there (otherwise they go to a temporary
folder and are only checked for size).
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright

from mailslot import FileStore, Mailbox
from mailslot.access.identity import Identity
from mailslot.core.message import Message
from support import put_config
from webserver import WebServer, web_server

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WAIT_MS = 15_000  # generous: the machine is shared; the page itself updates in well under 1 s
SCREENSHOT_LIMIT = 150_000



@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not os.path.exists(CHROMIUM):
        pytest.fail("Debian's chromium is missing: apt-get install chromium (.ci/run does)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield launched
        launched.close()


class Clock:
    """Message times a minute apart from a fixed start, so screenshots do not change."""

    def __init__(self) -> None:
        self.now = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(minutes=1, seconds=7)
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(root: Path) -> FileStore:
    store = FileStore(root)
    put_config(store, {
        "owner": "sarah",
        "custom": {"kept": True},
        "agents": {
            "gemini": {"wake_on_mail": True, "wake_method": "tmux", "tmux_target": "work:1.0",
                       "tmux_program": "gemini", "note": "mine"},
            "claude": {"wake_on_mail": False, "wake_method": "unsupported",
                       "blocked_models": ["*opus*"]},
            "codex": {"wake_on_mail": False},
        },
    })
    return store


def as_agent(store: FileStore, name: str, clock: Clock) -> Mailbox:
    return Mailbox(store, Identity(name, "--agent"), clock=clock)


@pytest.fixture
def server(store: FileStore) -> Iterator[WebServer]:
    with web_server() as running:
        yield running


class Watched:
    """A logged-in page, and everything it did that it must not do."""

    def __init__(self, context: BrowserContext, server: WebServer) -> None:
        self.page = context.new_page()
        self.server = server
        self.problems: list[str] = []
        self.expected: list[str] = []  # e.g. "status of 409": a refusal the test asks for
        self.page.on("console", lambda m: self.problems.append(f"console {m.type}: {m.text}")
                     if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        self.page.on("dialog", lambda d: (self.problems.append(f"dialog: {d.message}"),
                                          d.dismiss()))
        self.page.on("request", self._request)

    def _request(self, request: object) -> None:
        url = str(getattr(request, "url", ""))
        if not url.startswith(self.server.base + "/"):
            self.problems.append(f"request left the page: {url}")

    def go(self, path: str) -> Page:
        self.page.goto(self.server.base + path)
        return self.page


@pytest.fixture
def web(browser: Browser, server: WebServer) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": 1000, "height": 640})
    context.set_default_timeout(WAIT_MS)
    watched = Watched(context, server)
    watched.page.goto(server.login)
    yield watched
    context.close()
    unexpected = [p for p in watched.problems if not any(e in p for e in watched.expected)]
    assert unexpected == [], "\n".join(unexpected)


def shot(page: Page, name: str, tmp_path: Path) -> None:
    """A small screenshot for docs/ (or a temporary folder), checked for size."""
    folder = Path("docs") if os.environ.get("MAILSLOT_SCREENSHOTS") == "docs" else tmp_path
    if folder.name == "docs":
        folder = Path(__file__).resolve().parent.parent / "docs"
    path = folder / f"web-{name}.png"
    page.screenshot(path=str(path))
    assert path.stat().st_size < SCREENSHOT_LIMIT


def config(store: FileStore) -> dict[str, object]:
    return store.load_config()


# ------------------------------------------------------------------------------------
def test_the_token_opens_every_page(web: Watched, store: FileStore, clock: Clock,
                                    tmp_path: Path) -> None:
    claude, gemini = as_agent(store, "claude", clock), as_agent(store, "gemini", clock)
    first = claude.send("gemini", "Schema ready for review",
                        "The new schema is in PR 12.\nCould you check the indexes?",
                        expect_reply=True, re_issue="#12")
    answer = gemini.reply(first.id, "Looked at it: two indexes are redundant.\nDetails below.")
    claude.reply(answer.id, "Thanks, dropped them. Merging.")
    claude.broadcast("main is frozen", "Until 18:00 for the release.")
    page = web.page
    assert page.url == web.server.base + "/"
    page.reload()
    cookie = next(c for c in page.context.cookies() if c["name"] == "mailslot_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert page.locator("h1").inner_text() == "Agents"
    row = page.locator("tr", has=page.locator("th a", has_text="gemini"))
    assert row.locator("td.num").all_inner_texts() == ["1", "0", "1"]  # unread, read, done
    shot(page, "overview", tmp_path)

    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"

    web.go("/mail/gemini?state=done").get_by_role("link", name="Schema ready").click()
    assert page.locator("h1").inner_text() == "Schema ready for review"
    assert "Could you check the indexes?" in page.locator("pre.body").inner_text()
    assert page.locator("#state tbody tr").inner_text().split()[:3] == ["gemini", "replied", "done"]
    page.get_by_role("link", name="Read the whole thread").click()
    page.wait_for_url("**/thread/**")
    page.wait_for_load_state("load")  # count() and all_inner_texts() do not wait for it
    assert page.locator("ol.thread > li").count() == 3
    bodies = page.locator("ol.thread pre.body").all_inner_texts()
    assert bodies[2] == "Thanks, dropped them. Merging."
    shot(page, "thread", tmp_path)

    web.go("/broadcasts")
    assert "main is frozen" in page.locator("#live").inner_text()
    web.go("/compose")
    assert page.get_by_label("Subject").is_visible()
    web.go("/settings")
    shot(page, "settings", tmp_path)
    assert page.locator("#wake-gemini select[name=wake_method]").input_value() == "tmux"


def test_a_used_token_and_no_cookie_get_nothing(browser: Browser, web: Watched) -> None:
    stranger = browser.new_context()
    page = stranger.new_page()
    page.goto(web.server.login)  # already exchanged by the web fixture
    assert "wrong or was already used" in page.content()
    response = page.goto(web.server.base + "/settings")
    assert response is not None and response.status == 401
    stranger.close()


HOSTILE = [
    ("<script>window.pwned = 1</script>", "<script>window.pwned = 2</script>"),
    ('<img src="x" onerror="window.pwned = 3">',
     '<img src="https://evil.example/pixel.png" onerror="window.pwned = 4">'),
    ("<style>body { display: none }</style>",
     "[click me](javascript:window.pwned=5) <a href=\"javascript:window.pwned=6\">link</a>"),
    ('"><svg onload="window.pwned=7">',
     '<iframe src="https://evil.example/"></iframe><link rel="stylesheet" '
     'href="https://evil.example/x.css"><meta http-equiv="refresh" content="0;url=https://evil.example/">'),
]


def test_hostile_subjects_and_bodies_stay_text(web: Watched, store: FileStore,
                                              clock: Clock) -> None:
    claude = as_agent(store, "claude", clock)
    sent = [claude.send(["gemini", "sarah"], subject, body) for subject, body in HOSTILE]
    claude.broadcast(HOSTILE[0][0], HOSTILE[1][1])
    answer = as_agent(store, "sarah", clock).reply(sent[0].id, HOSTILE[2][1])
    pages = ["/", "/mail/gemini", "/mail/sarah", "/broadcasts", f"/thread/{answer.id}",
             *(f"/message/{m.id}" for m in sent)]
    for path in pages:
        page = web.go(path)
        page.wait_for_load_state("load")
        assert page.evaluate("window.pwned") is None, path
        dangerous = ("img, iframe, svg, style, link[href^=http], meta[http-equiv], "
                     "a[href^=javascript]")
        assert page.locator(dangerous).count() == 0, path
        assert page.locator("body").is_visible()
    page = web.go(f"/message/{sent[0].id}")
    assert page.locator("h1").inner_text() == HOSTILE[0][0]
    assert page.locator("pre.body").inner_text() == HOSTILE[0][1]
    page = web.go(f"/message/{sent[2].id}")
    assert "javascript:window.pwned=5" in page.locator("pre.body").inner_text()


def wait_until_live(page: Page) -> None:
    """Wait for the page's event stream to be open (app.js marks ``body[data-live=on]``).

    A locator assertion, polled by Playwright itself: ``wait_for_function`` with a string
    evaluates that string in the page on every poll after the first, which the page's CSP
    (no ``unsafe-eval``) refuses, so it failed whenever the stream opened late."""
    expect(page.locator("body")).to_have_attribute("data-live", "on", timeout=WAIT_MS)


def test_waiting_for_the_live_stream_survives_a_stream_that_opens_late(
        web: Watched, store: FileStore) -> None:
    page = web.go("/mail/gemini")
    wait_until_live(page)
    # As on a loaded machine: the stream is not open at the first check, only later.
    page.evaluate("delete document.body.dataset.live;"
                  "setTimeout(() => { document.body.dataset.live = 'on'; }, 500)")
    wait_until_live(page)
    assert page.evaluate("document.body.dataset.live") == "on"


def test_a_new_message_appears_without_reloading(web: Watched, store: FileStore,
                                                clock: Clock) -> None:
    as_agent(store, "claude", clock).send("gemini", "first", "one")
    page = web.go("/mail/gemini")
    wait_until_live(page)
    page.evaluate("window.stillHere = true")
    started = time.monotonic()
    as_agent(store, "codex", clock).send("gemini", "Tests are green <b>now</b>", "two")
    page.locator("#live-status").get_by_text("Tests are green <b>now</b>").wait_for(
        timeout=WAIT_MS)
    page.locator("#listing").get_by_role("link", name="Tests are green <b>now</b>").wait_for(
        timeout=WAIT_MS)
    print(f"arrival shown after {time.monotonic() - started:.3f} s")
    assert page.evaluate("window.stillHere") is True  # no reload
    assert page.locator("#live-status").inner_text().startswith("New: codex → gemini")


def test_settings_save_keeps_other_keys_and_a_conflict_is_shown(
        web: Watched, store: FileStore) -> None:
    web.expected += ["status of 400", "status of 409"]  # the refused saves below
    page = web.go("/settings")
    form = page.locator("#wake-gemini")
    form.get_by_label("tmux_target").fill("work:2.1")
    form.get_by_label("tmux_idle_seconds").fill("2.5")
    form.get_by_role("button", name="Save gemini").click()
    page.wait_for_url("**/settings?saved=gemini*")
    saved = config(store)
    gemini = saved["agents"]["gemini"]  # type: ignore[index]
    assert gemini["tmux_target"] == "work:2.1" and gemini["tmux_idle_seconds"] == 2.5
    assert gemini["note"] == "mine" and saved["custom"] == {"kept": True}
    assert saved["agents"]["claude"]["blocked_models"] == ["*opus*"]  # type: ignore[index]

    # A malformed value is refused with the reason, and nothing is written.
    page.locator("#wake-codex select[name=wake_method]").select_option("command")
    page.locator("#wake-codex").get_by_label("command").fill("notify-codex {id}")
    page.locator("#wake-codex select[name=wake_on_mail]").select_option("true")
    before = json.dumps(config(store), sort_keys=True)
    page.locator("#wake-codex").get_by_role("button", name="Save codex").click()
    assert "must be a JSON list" in page.locator("#wake-codex .error").inner_text()
    assert json.dumps(config(store), sort_keys=True) == before

    # Someone else edits gemini while the page is open: the save shows the conflict.
    page = web.go("/settings")
    store.update_config(lambda raw: raw["agents"]["gemini"].update(tmux_target="work:9.9")
                        is None)
    form = page.locator("#wake-gemini")
    form.get_by_label("tmux_target").fill("work:3.3")
    form.get_by_role("button", name="Save gemini").click()
    alert = page.locator("#wake-gemini .error")
    assert "changed elsewhere" in alert.inner_text()
    assert "tmux_target: work:3.3" in alert.inner_text()
    assert page.locator("#wake-gemini").get_by_label("tmux_target").input_value() == "work:9.9"
    assert config(store)["agents"]["gemini"]["tmux_target"] == "work:9.9"  # type: ignore[index]


def test_the_overview_switches_wakes_and_explains_an_unsupported_host(
        web: Watched, store: FileStore) -> None:
    page = web.page
    claude = page.get_by_role("switch", name="Wake claude on mail")
    assert claude.is_disabled()
    assert "cannot be woken" in page.locator(f"#{claude.get_attribute('aria-describedby')}"
                                             ).inner_text()
    gemini = page.get_by_role("switch", name="Wake gemini on mail (tmux)")
    assert gemini.get_attribute("aria-checked") == "true"
    gemini.click()
    page.get_by_role("switch", name="Wake gemini on mail (tmux)").and_(
        page.locator("[aria-checked=false]")).wait_for(timeout=WAIT_MS)
    entry = config(store)["agents"]["gemini"]  # type: ignore[index]
    assert entry["wake_on_mail"] is False and entry["tmux_target"] == "work:1.0"


def test_compose_reply_done_broadcast_and_retract_as_the_owner(
        web: Watched, store: FileStore, clock: Clock) -> None:
    page = web.go("/compose")
    page.get_by_label("To (names, separated by commas)").fill("gemini")
    page.get_by_label("Subject").fill("Can you take ticket 7?")
    page.get_by_label("Message").fill("It is the flaky login test.")
    page.get_by_label("ask for a reply").check()
    page.get_by_role("button", name="Send as sarah").click()
    assert page.locator("h1").inner_text() == "Can you take ticket 7?"
    item = as_agent(store, "gemini", clock).inbox()[0]
    assert (item.message.sender, item.message.expect_reply) == ("sarah", True)

    answer = as_agent(store, "gemini", clock).reply(item.message.id, "Yes, on it.")
    page = web.go(f"/message/{answer.id}")
    page.get_by_label("Reply to gemini").fill("Thank you!")
    page.get_by_role("button", name="Send reply").click()
    gemini = as_agent(store, "gemini", clock)
    thanks = gemini.read(gemini.inbox()[0].message.id).message
    assert (thanks.body, thanks.in_reply_to) == ("Thank you!", answer.id)
    assert store.state_of("sarah", answer.id) == "done"

    note = as_agent(store, "codex", clock).send("sarah", "FYI", "Deployed.")
    page = web.go(f"/message/{note.id}")
    page.get_by_role("button", name="Mark done").click()
    page.get_by_text("Done in your mailbox.").wait_for(timeout=WAIT_MS)
    assert store.state_of("sarah", note.id) == "done"

    page = web.go("/compose")
    page.get_by_label("everyone (broadcast)").check()
    page.get_by_label("Subject").fill("Lunch")
    page.get_by_label("Message").fill("At noon.")
    page.get_by_role("button", name="Send as sarah").click()
    broadcast: Message = store.load_broadcast(store.broadcast_ids()[0])[0]
    assert (broadcast.sender, broadcast.subject) == ("sarah", "Lunch")
    page = web.go("/broadcasts")
    page.get_by_role("button", name="Retract “Lunch”").click()
    page.locator("#retracted").get_by_role("link", name="Lunch").wait_for(timeout=WAIT_MS)
    assert store.broadcast_ids() == []

    page = web.go("/compose")  # a refused send keeps what was typed and says why
    web.expected.append("status of 400")
    page.get_by_label("To (names, separated by commas)").fill("all")
    page.get_by_label("Subject").fill("Everyone?")
    page.get_by_label("Message").fill("kept text")
    page.get_by_role("button", name="Send as sarah").click()
    assert page.get_by_role("alert").is_visible()
    assert page.get_by_label("Message").input_value() == "kept text"


def test_the_message_page_shows_each_recipients_ladder(
        web: Watched, store: FileStore, clock: Clock) -> None:
    from mailslot.access.identity import Identity
    from mailslot.service.delivery import Delivery

    sent = as_agent(store, "codex", clock).send(["gemini", "claude"], "Ladder", "x",
                                                notify_when="surfaced")
    delivery = Delivery(store, "gemini", Identity("gemini", "--agent"))
    planned = delivery.plan("start", "g-1", limit=10_000)
    assert planned is not None
    delivery.commit(planned, host="gemini")
    page = web.go(f"/message/{sent.id}")
    rows = page.locator("#state tbody tr")
    gemini = rows.filter(has_text="gemini").inner_text()
    claude = rows.filter(has_text="claude").inner_text()
    assert "surfaced" in gemini and "by start" in gemini
    assert "stored" in claude and "no live session" in claude
    assert page.get_by_text("when first surfaced").is_visible()


def test_state_badges_and_tags_keep_to_one_line_on_a_1280_px_screen(
        browser: Browser, server: WebServer, store: FileStore, clock: Clock) -> None:
    """A recipient whose mail waits has a long note beside its state: the table squeezes
    the state column, which must not break "unread" mid-word."""
    sent = as_agent(store, "codex", clock).send(["gemini", "claude", "codex"],
                                                "A subject " * 6, "x", expect_reply=True)
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    page.goto(server.login)
    for path in (f"/message/{sent.id}", "/mail/gemini"):
        page.goto(server.base + path)
        badges = page.locator(".state, .tag")
        expect(badges.first).to_be_visible()
        lines = badges.evaluate_all(
            "els => els.map(e => [e.textContent, e.getClientRects().length,"
            " e.getBoundingClientRect().height / parseFloat(getComputedStyle(e).lineHeight"
            " || getComputedStyle(e).fontSize)])")
        assert lines and all(rects == 1 and height < 1.9 for _, rects, height in lines), \
            (path, lines)
        assert any(text == "unread" for text, _, _ in lines) or path != f"/message/{sent.id}"
    context.close()


def test_dark_mode_follows_the_system_and_a_phone_needs_no_sideways_scroll(
        browser: Browser, server: WebServer, store: FileStore, clock: Clock) -> None:
    as_agent(store, "claude", clock).send("gemini", "A rather long subject " * 8, "body")
    context = browser.new_context(color_scheme="dark", viewport={"width": 390, "height": 844},
                                  is_mobile=True)
    page = context.new_page()
    page.goto(server.login)
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(21, 23, 26)"  # the dark palette
    for path in ("/", "/mail/gemini", "/settings", "/compose"):
        page.goto(server.base + path)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), path
    context.close()


# Gates, notifiers, search, no script, labels, phone, hostile -------
def test_gates_and_notifiers_are_edited_on_the_settings_page(
        web: Watched, store: FileStore, clock: Clock) -> None:
    web.expected.append("status of 400")  # the malformed notifier list below
    page = web.go("/settings")
    page.get_by_role("button", name="Gate gemini’s inbox (members only)").click()
    page.get_by_text("Changed gemini’s gate.").wait_for()
    assert store.accept_of("gemini") == "members"
    gate = page.locator("#gate-gemini")
    assert "gated (members only)" in gate.locator("h3").inner_text()
    gate.get_by_label("Admit an agent to gemini’s members").fill("codex")
    gate.get_by_role("button", name="Admit").click()
    page.get_by_text("Changed gemini’s gate.").wait_for()
    assert store.members("gemini") == ["codex"]
    as_agent(store, "codex", clock).send("gemini", "member mail", "passes the gate")
    page.get_by_role("button", name="Remove codex from gemini’s members").click()
    page.get_by_text("Changed gemini’s gate.").wait_for()
    assert store.members("gemini") == []

    form = page.locator("#wake-codex")
    form.get_by_label("Notifiers").fill('[{"kind": "desktop"}, {"kind": "pager"}]')
    before = json.dumps(config(store), sort_keys=True)
    form.get_by_role("button", name="Save codex").click()
    assert "kind must be one of" in page.locator("#wake-codex .error").inner_text()
    assert json.dumps(config(store), sort_keys=True) == before
    page.locator("#wake-codex").get_by_label("Notifiers").fill('[{"kind": "bank"}]')
    page.locator("#wake-codex").get_by_role("button", name="Save codex").click()
    page.wait_for_url("**/settings?saved=codex*")
    saved = config(store)
    assert saved["agents"]["codex"]["notify"] == [{"kind": "bank"}]  # type: ignore[index]
    assert saved["custom"] == {"kept": True}
    assert saved["agents"]["claude"]["blocked_models"] == ["*opus*"]  # type: ignore[index]
    # launch guardrails are shown, never as a field the page could send
    assert page.locator("[name=blocked_models], [name=default_model]").count() == 0
    assert "*opus*" in page.locator("#wake-claude .readonly").inner_text()


def test_every_page_works_without_javascript(browser: Browser, server: WebServer,
                                             store: FileStore, clock: Clock) -> None:
    """Reading, sending, saving settings, gates and search are plain links and forms."""
    first = as_agent(store, "claude", clock).send("sarah", "Index rebuild", "the search index")
    context = browser.new_context(java_script_enabled=False)
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    page.goto(server.login)
    for path in ("/", "/mail/sarah", f"/message/{first.id}", f"/thread/{first.id}",
                 "/broadcasts", "/compose", "/settings", "/search"):
        response = page.goto(server.base + path)
        assert response is not None and response.status == 200, path
    assert not page.evaluate("document.documentElement.classList.contains('js')")

    page.goto(server.base + "/search")
    page.get_by_label("Words").fill("index")
    page.get_by_role("button", name="Search").click()
    page.get_by_role("link", name="Index rebuild").click()
    assert page.locator("h1").inner_text() == "Index rebuild"
    page.get_by_label("Reply to claude").fill("Done, rebuilt.")
    page.get_by_role("button", name="Send reply").click()
    assert page.locator("h1").inner_text() == "Re: Index rebuild"

    page.goto(server.base + "/")
    page.get_by_role("switch", name="Wake gemini on mail (tmux)").click()
    assert page.url == server.base + "/"
    assert config(store)["agents"]["gemini"]["wake_on_mail"] is False  # type: ignore[index]

    page.goto(server.base + "/settings")
    form = page.locator("#wake-gemini")
    assert form.get_by_label("tmux_target").is_visible()  # every method's fields show
    form.get_by_label("tmux_target").fill("work:4.0")
    form.get_by_role("button", name="Save gemini").click()
    assert config(store)["agents"]["gemini"]["tmux_target"] == "work:4.0"  # type: ignore[index]
    page.get_by_role("button", name="Gate codex’s inbox (members only)").click()
    assert store.accept_of("codex") == "members"
    context.close()


FORM_CONTROLS = "input:not([type=hidden]), select, textarea, button"
UNLABELLED = """(selector) => Array.from(document.querySelectorAll(selector)).filter(el => {
  const named = (el.labels && el.labels.length) || el.getAttribute('aria-label') ||
    el.getAttribute('aria-labelledby') || (el.tagName === 'BUTTON' && el.textContent.trim());
  return !named;
}).map(el => el.outerHTML.slice(0, 80))"""


def test_every_control_has_a_label_and_the_keyboard_reaches_it(
        web: Watched, store: FileStore, clock: Clock) -> None:
    message = as_agent(store, "claude", clock).send("sarah", "Labels", "a body")
    store.set_member("gemini", "codex", True)
    for path in ("/", "/mail/sarah", f"/message/{message.id}", "/compose", "/settings",
                 "/search?q=body", "/broadcasts"):
        page = web.go(path)
        assert page.evaluate(UNLABELLED, FORM_CONTROLS) == [], path
        assert page.locator("h1").count() == 1, path
        assert page.locator("main#main").count() == 1, path

    page = web.go("/search")
    page.keyboard.press("Tab")  # the skip link first, then into the page
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.keyboard.press("Enter")
    for _ in range(12):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id") == "q":
            break
    assert page.evaluate("document.activeElement.id") == "q"
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none"  # a visible focus ring
    page.keyboard.type("Labels")
    page.keyboard.press("Enter")  # submits the form from the keyboard
    page.get_by_role("link", name="Labels").wait_for()

    page = web.go("/")  # the wake switch answers the space bar
    page.get_by_role("switch", name="Wake gemini on mail (tmux)").focus()
    page.keyboard.press("Space")
    page.get_by_role("switch", name="Wake gemini on mail (tmux)").and_(
        page.locator("[aria-checked=false]")).wait_for()
    assert config(store)["agents"]["gemini"]["wake_on_mail"] is False  # type: ignore[index]


def test_a_phone_reads_and_edits_every_page_without_sideways_scroll(
        browser: Browser, server: WebServer, store: FileStore, clock: Clock) -> None:
    sent = as_agent(store, "claude", clock).send(
        "sarah", "Phones " * 20, "a_long_unbroken_line_" * 20, expect_reply=True)
    store.set_member("gemini", "a-rather-long-agent-name-for-a-phone", True)
    context = browser.new_context(viewport={"width": 360, "height": 740}, is_mobile=True,
                                  has_touch=True)
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    page.goto(server.login)
    for path in ("/", "/mail/sarah", f"/message/{sent.id}", f"/thread/{sent.id}",
                 "/settings", "/compose", "/search?q=phones", "/broadcasts"):
        page.goto(server.base + path)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), path
    page.goto(server.base + "/settings")
    button = page.get_by_role("button", name="Save gemini")
    button.scroll_into_view_if_needed()
    box = button.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 360
    assert box["height"] >= 24  # a target a thumb can hit
    context.close()


class Canary:
    """A listener on another local port: a hostile ``<img>``, stylesheet or frame pointed at
    it would connect. The test asserts nothing ever does."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.hits = 0
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self.sock.accept()
            except OSError:
                continue
            self.hits += 1
            connection.close()

    def close(self) -> None:
        self._stop.set()
        self.thread.join(timeout=5)
        self.sock.close()


def test_hostile_mail_loads_nothing_and_the_policy_forbids_it(
        web: Watched, store: FileStore, clock: Clock) -> None:
    canary = Canary()
    try:
        hostile = [
            (f'<img src="{canary.url}/s.png">',
             f'<script src="{canary.url}/x.js"></script><img src={canary.url}/b.png '
             f'onerror=window.pwned=1><link rel=stylesheet href="{canary.url}/c.css">'),
            ('<style>@import "' + canary.url + '/i.css";</style>',
             f'<iframe src="{canary.url}/f"></iframe><object data="{canary.url}/o">'
             f'<video poster="{canary.url}/p.png"></video>'),
        ]
        claude = as_agent(store, "claude", clock)
        sent = [claude.send("sarah", subject, body) for subject, body in hostile]
        put_config(store, {**config(store), "agents": {
            **config(store)["agents"],  # type: ignore[dict-item]
            "codex": {"notify": [{"kind": "command", "command": [f"<img src={canary.url}>"]}]}}})
        for path in ["/", "/mail/sarah", "/search?q=img", "/settings",
                     *(f"/message/{m.id}" for m in sent), f"/thread/{sent[0].id}"]:
            response = web.page.goto(web.server.base + path)
            assert response is not None
            policy = response.headers["content-security-policy"]
            assert "default-src 'none'" in policy and "script-src 'self'" in policy
            assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
            web.page.wait_for_load_state("load")
            assert web.page.evaluate("window.pwned") is None, path
            assert web.page.locator("img, script[src*=':'], iframe, object, video, "
                                    "link[href*=':']").count() == 0, path
        page = web.go(f"/message/{sent[0].id}")
        assert page.locator("pre.body").inner_text() == hostile[0][1]
        page = web.go("/search?q=img")
        assert page.get_by_role("link", name=hostile[0][0]).is_visible()
    finally:
        canary.close()
    assert canary.hits == 0  # nothing in the page reached for the hostile address
    # and the Watched fixture checks no request left the page's own origin
