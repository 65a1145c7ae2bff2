"""A2A v1.0 on ``serve --http``: every mailslot agent as an A2A agent (docs/a2a.md).

``URL/a2a/NAME/.well-known/agent-card.json`` is agent ``NAME``'s card and ``URL/a2a/NAME``
its endpoint (JSON-RPC, and HTTP+JSON under it). The official SDK (``a2a-sdk``) gives the
routes, the dispatch, the version check, the event streams, the types and the errors;
the request handler is mailslot's own, over the service: a task is a message, and its
state is read from the mail each time (:mod:`mailslot.service.tasks`), so nothing of a
task lives only in this server.

Every request has passed the door (:mod:`.guard`: the caller's own bearer credential,
which makes it the sender; nobody else can be), and every call re-opens the caller's
mailbox with it, as a tool call does. ``SendMessage`` is ``send`` (gates, the loop
governor, limits, wakes: as everywhere) and answers once the mail is stored; a refusal
is a ``REJECTED`` task with the reason. A blocking ``SendMessage`` is not held open
until the reply, which may be hours away: follow a task with ``SubscribeToTask`` or
send with ``SendStreamingMessage``. Only ``serve --http`` imports this module.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import AsyncExitStack
from typing import Any, TypeVar

import anyio
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import RequestHandler
from a2a.server.routes import create_jsonrpc_routes, create_rest_routes
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import (
    InternalError,
    InvalidParamsError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from google.protobuf.json_format import MessageToDict
from starlette.applications import Starlette
from starlette.authentication import SimpleUser
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route

from ...core.errors import InvalidInput, MailslotError, NotFound, Refused
from ...core.names import check_name
from ...service import tasks
from ...service.mailbox import Mailbox
from . import a2a_wire
from .a2a_push import Pushes, allowed_hosts
from .guard import BodyTooLarge, answer, read_body, replaying

A2A_PATH = "/a2a"
POLL_FIRST, POLL_MOST = 0.05, 1.0
"""How often a stream looks at its task: soon after a change, then less often."""
PAGE, MOST_PAGE = 50, 100
_CALLER = "mailslot.a2a"
T = TypeVar("T")


class Caller:
    """Who is asking, of which agent: its mailbox is opened anew for every call."""

    def __init__(self, open_box: Callable[[], Mailbox], agent: str, url: str) -> None:
        self.open_box = open_box
        self.agent = agent
        self.url = url

    async def call(self, work: Callable[..., T], *args: Any) -> T:
        """``work(box, agent, *args)`` in a thread, mailslot's errors as A2A's."""
        def run() -> T:
            try:
                return work(self.open_box(), self.agent, *args)
            except NotFound as exc:
                raise TaskNotFoundError(message=str(exc)) from None
            except InvalidInput as exc:
                raise InvalidParamsError(message=str(exc)) from None
            except MailslotError as exc:
                raise InternalError(message=str(exc)) from None

        return await anyio.to_thread.run_sync(run)


def _caller(context: ServerCallContext) -> Caller:
    found = context.state.get(_CALLER)
    assert isinstance(found, Caller), "a request that did not pass A2A.serve"
    return found


class _Context(DefaultServerCallContextBuilder):
    """The SDK's call context, carrying the caller the door let in."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state[_CALLER] = request.scope[_CALLER]
        return context


class A2A:
    """The ``/a2a/`` part of the server: one SDK app for every agent."""

    def __init__(self, scheme: str) -> None:
        self.scheme = scheme
        self.pushes = Pushes(self._push_hosts)
        handler = MailHandler(self.pushes)
        built = _Context()
        self.app = Starlette(routes=[
            Route(A2A_PATH + "/{name}/.well-known/agent-card.json", self._card,
                  methods=["GET"]),
            *create_jsonrpc_routes(handler, A2A_PATH + "/{name}", context_builder=built),
            Mount(A2A_PATH + "/{name}", routes=create_rest_routes(handler,
                                                                  context_builder=built)),
        ])
        self._hosts_box: Callable[[], Mailbox] | None = None

    async def run(self, stack: AsyncExitStack) -> None:
        """Start the push followers' task group; ``stack`` stops it at shutdown."""
        group = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(group.cancel_scope.cancel)
        await self.pushes.run(group)
        stack.push_async_callback(self.pushes.close)

    async def serve(self, scope: dict[str, Any], receive: Any, send: Any,
                    open_box: Callable[[], Mailbox], max_body_bytes: int) -> None:
        """A request under ``/a2a/NAME``, from a caller the door let in."""
        parts = scope["path"].split("/")
        try:
            name = check_name(parts[2] if len(parts) > 2 else "", "agent")
            box = await anyio.to_thread.run_sync(open_box)
            known = await anyio.to_thread.run_sync(_known, box, name)
        except MailslotError:
            known = False
        if not known:
            return await answer(send, 404, {"error": "no such agent"})
        try:
            body = await read_body(receive, max_body_bytes)
        except BodyTooLarge:
            return await answer(send, 413, {"error": "request body too large"})
        self._hosts_box = open_box
        host = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
        url = f"{self.scheme}://{host}{A2A_PATH}/{name}"
        scope = {**scope, "user": SimpleUser(box.agent),
                 _CALLER: Caller(open_box, name, url)}
        await self.app(scope, replaying(body, receive), send)

    async def _card(self, request: Request) -> Response:
        caller: Caller = request.scope[_CALLER]
        push = bool(await self._push_hosts())
        card = a2a_wire.card_of(caller.agent, caller.url, push=push)
        return JSONResponse(MessageToDict(card), headers={"cache-control": "no-store"})

    async def _push_hosts(self) -> frozenset[str]:
        """The hosts the owner allows now (read from the config at each use)."""
        opened = self._hosts_box
        if opened is None:
            return frozenset()
        return await anyio.to_thread.run_sync(lambda: allowed_hosts(opened()))


class MailHandler(RequestHandler):
    """Every A2A method, over the caller's mailbox."""

    def __init__(self, pushes: Pushes) -> None:
        self.pushes = pushes

    async def on_message_send(self, params: SendMessageRequest,
                              context: ServerCallContext) -> Task:
        return (await self._send(_caller(context), params, context))[0]

    async def on_message_send_stream(self, params: SendMessageRequest,
                                     context: ServerCallContext
                                     ) -> AsyncGenerator[Any, None]:
        caller = _caller(context)
        first, sent = await self._send(caller, params, context)
        yield first
        if sent is not None:
            async for event in _follow(caller, sent):
                yield event

    async def _send(self, caller: Caller, params: SendMessageRequest,
                    context: ServerCallContext) -> tuple[Task, tasks.MailTask | None]:
        """The mail sent: its task, and the task as stored (``None``: rejected)."""
        if params.message.task_id:
            raise UnsupportedOperationError(
                message="a task takes no more messages: answer its reply as mail")
        subject, body = a2a_wire.mail_of(params.message)
        found = await caller.call(_send, subject, body)
        if isinstance(found, str):
            return a2a_wire.rejected(params.message, found), None
        push = params.configuration.task_push_notification_config
        if params.configuration.HasField("task_push_notification_config"):
            push.task_id = found.message.id
            await self.pushes.add(push, context, lambda: _follow(caller, found))
        return a2a_wire.task_of(found, _history(params.configuration)), found

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task:
        found = await _caller(context).call(_task, params.id)
        return a2a_wire.task_of(found, _history(params))

    async def on_list_tasks(self, params: ListTasksRequest,
                            context: ServerCallContext) -> ListTasksResponse:
        size = params.page_size if params.HasField("page_size") else PAGE
        if not 1 <= size <= MOST_PAGE:
            raise InvalidParamsError(message=f"page_size is 1 to {MOST_PAGE}")
        wanted = {a2a_wire.STATES[s]: s for s in a2a_wire.STATES}.get(params.status)

        def keep(task: tasks.MailTask) -> bool:
            return ((wanted is None or task.state == wanted)
                    and (not params.context_id
                         or (task.message.thread or task.message.id) == params.context_id))

        found = await _caller(context).call(_page, size + 1, params.page_token or None, keep)
        page = found[:size]
        shown = [a2a_wire.task_of(t, _history(params)) for t in page]
        if params.HasField("include_artifacts") and not params.include_artifacts:
            for task in shown:
                del task.artifacts[:]
        more = page[-1].message.id if len(found) > size else ""
        return ListTasksResponse(tasks=shown, next_page_token=more, page_size=size,
                                 total_size=len(page))

    async def on_cancel_task(self, params: CancelTaskRequest,
                             context: ServerCallContext) -> Task:
        return a2a_wire.task_of(await _caller(context).call(_cancel, params.id))

    async def on_subscribe_to_task(self, params: SubscribeToTaskRequest,
                                   context: ServerCallContext
                                   ) -> AsyncGenerator[Any, None]:
        caller = _caller(context)
        first = await caller.call(_task, params.id)
        if first.terminal:
            raise UnsupportedOperationError(message=f"task {params.id} is {first.state}")
        yield a2a_wire.task_of(first)
        async for event in _follow(caller, first):
            yield event

    async def on_create_task_push_notification_config(
            self, params: TaskPushNotificationConfig,
            context: ServerCallContext) -> TaskPushNotificationConfig:
        caller = _caller(context)
        now = await caller.call(_task, params.task_id)  # the caller's own task only
        return await self.pushes.add(params, context, lambda: _follow(caller, now))

    async def on_get_task_push_notification_config(
            self, params: GetTaskPushNotificationConfigRequest,
            context: ServerCallContext) -> TaskPushNotificationConfig:
        for config in await self.pushes.configs.get_info(params.task_id, context):
            if config.id == params.id:
                return config
        raise TaskNotFoundError(message=f"no push config {params.id} of task "
                                        f"{params.task_id}")

    async def on_list_task_push_notification_configs(
            self, params: ListTaskPushNotificationConfigsRequest,
            context: ServerCallContext) -> ListTaskPushNotificationConfigsResponse:
        return ListTaskPushNotificationConfigsResponse(
            configs=await self.pushes.configs.get_info(params.task_id, context))

    async def on_delete_task_push_notification_config(
            self, params: DeleteTaskPushNotificationConfigRequest,
            context: ServerCallContext) -> None:
        await self.pushes.configs.delete_info(params.task_id, context, params.id)

    async def on_get_extended_agent_card(self, params: GetExtendedAgentCardRequest,
                                         context: ServerCallContext) -> AgentCard:
        raise UnsupportedOperationError(message="mailslot's cards have no extended form")


def _task(box: Mailbox, agent: str, task_id: str) -> tasks.MailTask:
    return tasks.task_of(box, task_id, agent)


def _known(box: Mailbox, name: str) -> bool:
    """Is ``name`` an agent here: one with a mailbox, in the config, the owner, or
    registered (with a credential, and no mail yet)?"""
    return box.store.registered(name) is not None or name in box.known_agents()


def _send(box: Mailbox, agent: str, subject: str, body: str) -> tasks.MailTask | str:
    """Mail from the caller to ``agent`` (a reply is expected): its task, or why not."""
    try:
        sent = box.send(agent, subject, body, expect_reply=True)
    except (Refused, InvalidInput) as exc:
        return str(exc)
    return tasks.MailTask(sent, agent, tasks.SUBMITTED, sent.date)


def _page(box: Mailbox, agent: str, limit: int, after: str | None,
          keep: Callable[[tasks.MailTask], bool]) -> list[tasks.MailTask]:
    return tasks.tasks_to(box, agent, limit=limit, after=after, keep=keep)


def _cancel(box: Mailbox, agent: str, task_id: str) -> tasks.MailTask:
    """Recall the caller's unread message: its task ``CANCELED``; read or answered
    mail cannot be taken back (``TaskNotCancelableError``)."""
    found = tasks.task_of(box, task_id, agent)
    if found.state == tasks.CANCELED:
        return found
    try:
        return tasks.recall(box, task_id, agent)
    except Refused as exc:
        raise TaskNotCancelableError(message=str(exc)) from None


def _history(params: Any) -> int | None:
    return params.history_length if params.HasField("history_length") else None


async def _follow(caller: Caller, last: tasks.MailTask) -> AsyncIterator[Any]:
    """Each change of the task's state after ``last`` (as the caller last saw it), until
    it ends: the reply as an artifact first, then the new status. The mail is looked at
    often just after a change, then less often (:data:`POLL_MOST`)."""
    task_id = last.message.id
    pause = POLL_FIRST
    while not last.terminal:
        await anyio.sleep(pause)
        now = await caller.call(_task, task_id)
        if now.state == last.state:
            pause = min(pause * 2, POLL_MOST)
            continue
        pause, last = POLL_FIRST, now
        task = a2a_wire.task_of(now, 0)
        if task.artifacts:
            yield TaskArtifactUpdateEvent(task_id=task.id, context_id=task.context_id,
                                          artifact=task.artifacts[0], last_chunk=True)
        yield TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id,
                                    status=task.status)

