"""The page's routes: parse the request, call the service once, render a template.

Reading needs no JavaScript: every page is rendered here, and message text reaches
HTML only through Jinja's autoescaping (never ``|safe``), so a subject or body is
always shown as text. Changes are ``POST`` forms carrying the session's CSRF token
(see :mod:`.security`); after a change the browser is sent on (303) to the page that
shows its result. Every change speaks as the config's ``owner``
(:func:`mailslot.service.browse.owner_mailbox`).

Each route is a module-level function of the request; what it needs (the store, the
sessions, the live hub, the templates) is the app's :class:`Page`, in
``request.app.state``. :data:`ROUTES` lists them all; :func:`build_app` puts them behind
the :class:`~.security.Guard`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import parse_qs, quote

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ...core.config import Config
from ...core.errors import InvalidInput, MailslotError, NotFound, ProbableTypo
from ...core.message import STATES
from ...core.names import check_name
from ...keep import finding
from ...service import browse, settings
from ...service.mailbox import Mailbox
from ...store import Store
from .live import Hub
from .security import COOKIE, Guard, Sessions, TooLarge, session_of

Handler = Callable[[Request], Awaitable[Response]]
SEARCH_SHOWN = 100  # the best hits a search page lists
NEW_ANYWAY = "tick “send anyway to a new agent” and send again"
"""How the compose form sends to a new name close to a known one (its checkbox)."""


def _templates() -> Environment:
    env = Environment(loader=PackageLoader("mailslot.frontends.web", "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["when"] = lambda text: str(text)[:16].replace("T", " ")
    env.filters["url"] = lambda text: quote(str(text), safe="")
    return env


class Page:
    """Everything a route needs: the store, the sessions, the live hub, the templates
    (one per app, in its state)."""

    def __init__(self, store: Store, sessions: Sessions, hub: Hub) -> None:
        self.store = store
        self.sessions = sessions
        self.hub = hub
        self.templates = _templates()

    # Rendering -----------------------------------------------------------------------
    def render(self, request: Request, name: str, status: int = 200, **context: Any
               ) -> HTMLResponse:
        try:
            owner = Config(self.store.load_config()).owner
        except MailslotError:
            owner = None
        html = self.templates.get_template(name).render(
            csrf=self.sessions.csrf(session_of(request.scope)) or "", owner=owner,
            path=request.url.path, **context)
        return HTMLResponse(html, status_code=status)

    def problem(self, request: Request, error: MailslotError | str, status: int = 400
                ) -> HTMLResponse:
        return self.render(request, "problem.html", status, message=str(error))

    async def form(self, request: Request) -> dict[str, str]:
        """The posted form, checked: url-encoded, within the size limit, carrying this
        session's CSRF token. Raises :class:`InvalidInput` (refused before any change)."""
        kind = request.headers.get("content-type", "").split(";")[0].strip()
        if kind != "application/x-www-form-urlencoded":
            raise InvalidInput("a change must be sent as a form from the page")
        raw = await request.body()  # TooLarge past the limit: 413 (see ``route``)
        try:
            fields = parse_qs(raw.decode("utf-8"), keep_blank_values=True,
                              max_num_fields=200)
        except (UnicodeDecodeError, ValueError):
            raise InvalidInput("the form could not be read") from None
        form = {k: v[-1] for k, v in fields.items()}
        if not self.sessions.check_csrf(session_of(request.scope), form.get("csrf", "")):
            raise _CsrfMissing("refused: the form's CSRF token is missing or wrong "
                               "(reload the page and try again)")
        return form


class _CsrfMissing(InvalidInput):
    """A change without this session's token: refused with 403, nothing changed."""


def _see(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


def _page(request: Request) -> Page:
    """The app's :class:`Page` (``build_app`` keeps it in the app's state)."""
    page: Page = request.app.state.page
    return page


def _guarded(handler: Handler) -> Handler:
    """``handler``, its refusals shown as the problem page with their status."""
    async def guarded(request: Request) -> Response:
        try:
            return await handler(request)
        except _CsrfMissing as exc:
            return _page(request).problem(request, exc, 403)
        except TooLarge as exc:
            return _page(request).problem(request, str(exc), 413)
        except NotFound as exc:
            return _page(request).problem(request, exc, 404)
        except MailslotError as exc:
            return _page(request).problem(request, exc, 400 if isinstance(exc, InvalidInput)
                                          else 409)
    return guarded


# Signing in -----------------------------------------------------------------------
async def login(request: Request) -> Response:
    page = _page(request)
    if page.sessions.csrf(session_of(request.scope)) is not None:
        return _see("/")  # already in: the link opened again (history, a reload)
    session = page.sessions.exchange(request.query_params.get("token", ""))
    if session is None:
        return page.problem(request, "this login link is wrong or was already used: "
                            "restart `mailslot web` for a new one", 403)
    response = _see("/")
    response.set_cookie(COOKIE, session, httponly=True, samesite="strict", path="/")
    return response


async def favicon(request: Request) -> Response:
    return RedirectResponse("/static/favicon.svg", status_code=301)


# Reading --------------------------------------------------------------------------
async def overview(request: Request) -> Response:
    page = _page(request)
    rows = browse.agents(Mailbox(page.store))
    known = settings.versions(page.store)
    versions = {r.info.name: known.get(r.info.name, settings.version({})) for r in rows}
    return page.render(request, "overview.html", agents=rows, versions=versions,
                       wakes=browse.wake_log(page.store), watcher=browse.watcher(page.store),
                       live=browse.broadcasts(page.store, live=True, limit=5))


async def mail(request: Request) -> Response:
    page = _page(request)
    agent = check_name(request.path_params["agent"], "mailbox")
    wanted = request.query_params.get("state", "unread")
    state = next((s for s in STATES if s == wanted), None)
    if state is None:
        raise InvalidInput("state must be unread, read or done")
    return page.render(request, "mail.html", listing=browse.listing(page.store, agent, state))


async def message(request: Request) -> Response:
    page = _page(request)
    shown = browse.show(Mailbox(page.store), request.path_params["id"])
    return page.render(request, "message.html", shown=shown,
                       thread=browse.thread(page.store, shown.message))


async def thread(request: Request) -> Response:
    page = _page(request)
    shown = browse.show(Mailbox(page.store), request.path_params["id"])
    return page.render(request, "thread.html", root=shown.message,
                       thread=browse.thread(page.store, shown.message, bodies=True))


async def broadcasts(request: Request) -> Response:
    page = _page(request)
    return page.render(request, "broadcasts.html",
                       live=browse.broadcasts(page.store, live=True),
                       retracted=browse.broadcasts(page.store, live=False))


async def stats(request: Request) -> Response:
    """``mailslot stats`` on the page: the owner's view, every agent's mail."""
    page = _page(request)
    asked = request.query_params.get("since", "").strip()
    box = Mailbox(page.store)
    from ...service import timing

    since = timing.since(asked or None, box.now())
    return page.render(request, "stats.html", rows=box.stats(since=asked or None),
                       since=since.isoformat(), asked=asked)


async def search(request: Request) -> Response:
    page = _page(request)
    query = request.query_params.get("q", "").strip()
    sender = request.query_params.get("from", "").strip()
    state = request.query_params.get("state", "")
    shown: dict[str, Any] = {"q": query, "sender": sender, "state": state,
                             "hits": None, "more": False, "error": None, "indexing": ""}
    if not query:
        return page.render(request, "search.html", **shown)
    try:
        hits = finding.search(browse.owner_mailbox(page.store), query, sender=sender or None,
                              states=(state,) if state else (), limit=SEARCH_SHOWN + 1)
    except InvalidInput as exc:
        return page.render(request, "search.html", 400, **{**shown, "error": str(exc)})
    return page.render(request, "search.html", **{**shown, "hits": hits[:SEARCH_SHOWN],
                                                  "more": len(hits) > SEARCH_SHOWN,
                                                  "indexing": hits.still_indexing})


async def events(request: Request) -> Response:
    # StreamingResponse ends the stream itself when the page goes away.
    return StreamingResponse(_page(request).hub.events(), media_type="text/event-stream")


# Sending and changing mail, as the owner -------------------------------------------
async def compose(request: Request) -> Response:
    page = _page(request)
    return page.render(request, "compose.html", values=dict(request.query_params),
                       error=None, known=Mailbox(page.store).known_agents())


async def send(request: Request) -> Response:
    page = _page(request)
    form = await page.form(request)
    try:
        box = browse.owner_mailbox(page.store)
        if form.get("kind") == "broadcast":
            sent = box.broadcast(form.get("subject", ""), form.get("body", ""))
        else:
            sent = box.send(form.get("to", ""), form.get("subject", ""),
                            form.get("body", ""), expect_reply="expect_reply" in form,
                            wake="wake" in form, new="new" in form)
    except MailslotError as exc:
        said = exc.anyway(NEW_ANYWAY) if isinstance(exc, ProbableTypo) else str(exc)
        return page.render(request, "compose.html", 400, values=form, error=said,
                           known=Mailbox(page.store).known_agents())
    return _see(f"/message/{quote(sent.id)}")


async def reply(request: Request) -> Response:
    page = _page(request)
    form = await page.form(request)
    sent = browse.owner_mailbox(page.store).reply(request.path_params["id"],
                                                  form.get("body", ""))
    return _see(f"/message/{quote(sent.id)}")


async def done(request: Request) -> Response:
    page = _page(request)
    await page.form(request)
    browse.owner_mailbox(page.store).done([request.path_params["id"]])
    return _see(f"/message/{quote(request.path_params['id'])}")


async def retract(request: Request) -> Response:
    page = _page(request)
    await page.form(request)
    browse.owner_mailbox(page.store).retract(request.path_params["id"])
    return _see("/broadcasts")


# Settings -------------------------------------------------------------------------
async def settings_page(request: Request) -> Response:
    return _settings(request, None)


def _settings(request: Request, result: tuple[str, settings.Saved, Mapping[str, str]] | None,
              status: int = 200, gate_error: tuple[str, str] | None = None) -> Response:
    page = _page(request)
    store = page.store
    names = [a.name for a in Mailbox(store).who()]
    forms = settings.wake_forms(store, names)
    return page.render(request, "settings.html", status, forms=forms,
                       fields=settings.method_fields(), opt_ins=settings.OPT_INS,
                       kinds=settings.notifier_fields(), result=result,
                       others=settings.other_settings(store),
                       gates=settings.gate_views(store, [f.agent for f in forms]),
                       gate_error=gate_error, saved=request.query_params.get("saved"),
                       gate_saved=request.query_params.get("gate"),
                       paused=settings.paused(store))


async def save_wake(request: Request) -> Response:
    page = _page(request)
    form = await page.form(request)
    agent = request.path_params["agent"]
    saved = settings.save_wake(page.store, agent, form.get("version", ""),
                               form.get("wake_on_mail", ""), form.get("wake_method", ""),
                               None if form.get("fields") == "keep" else form,
                               form.get("notify"))
    if saved.saved and form.get("back") == "overview":
        return _see("/")
    if saved.saved:
        return _see(f"/settings?saved={quote(agent)}#wake-{quote(agent)}")
    status = 409 if saved.conflict else 400
    return _settings(request, (saved.current.agent, saved, form), status)


async def save_gate(request: Request) -> Response:
    page = _page(request)
    form = await page.form(request)
    agent = check_name(request.path_params["agent"], "agent")
    try:
        settings.change_gate(page.store, agent, form.get("action", ""), form.get("name", ""))
    except MailslotError as exc:
        return _settings(request, None, 400, (agent, str(exc)))
    return _see(f"/settings?gate={quote(agent)}#gate-{quote(agent)}")


async def save_pause(request: Request) -> Response:
    """Pause or resume an agent (or everyone): the loop governor's owner switch."""
    page = _page(request)
    form = await page.form(request)
    settings.change_pause(page.store, form.get("action", ""), form.get("agent", ""))
    return _see("/settings#governor-h")


# The app --------------------------------------------------------------------------
def _get(path: str, endpoint: Handler) -> Route:
    return Route(path, _guarded(endpoint), methods=["GET"])


def _post(path: str, endpoint: Handler) -> Route:
    return Route(path, _guarded(endpoint), methods=["POST"])


ROUTES: list[Route | Mount] = [
    _get("/login", login),
    _get("/favicon.ico", favicon),
    _get("/", overview),
    _get("/mail/{agent}", mail),
    _get("/message/{id}", message),
    _get("/thread/{id}", thread),
    _get("/broadcasts", broadcasts),
    _get("/search", search),
    _get("/stats", stats),
    _get("/compose", compose),
    _post("/compose", send),
    _post("/message/{id}/reply", reply),
    _post("/message/{id}/done", done),
    _post("/broadcasts/{id}/retract", retract),
    _get("/settings", settings_page),
    _post("/settings/wake/{agent}", save_wake),
    _post("/settings/gate/{agent}", save_gate),
    _post("/settings/pause", save_pause),
    _get("/events", events),
    Mount("/static", StaticFiles(packages=[("mailslot.frontends.web", "static")]), name="static"),
]
"""Every page and form, and the static files."""


@contextlib.asynccontextmanager
async def _lifespan(app: Starlette) -> AsyncIterator[None]:
    """The live hub runs while the app does."""
    hub = app.state.page.hub
    hub.start()
    try:
        yield
    finally:
        hub.stop()


def build_app(store: Store, sessions: Sessions, hub: Hub, port: Callable[[], int]) -> Guard:
    """The whole page as an ASGI app, behind :class:`~.security.Guard`; ``hub`` runs
    while the app does."""
    app = Starlette(routes=ROUTES, lifespan=_lifespan)
    app.state.page = Page(store, sessions, hub)
    return Guard(app, sessions, port)
