"""Mail in A2A's words (a2a-sdk's protobuf types): a message's parts as a mail body, a
mail task (:mod:`mailslot.service.tasks`) as an A2A ``Task``, and an agent's card.

Parts of a ``SendMessage``: ``text`` parts are the body, joined by blank lines; a
``data`` part is written into the body as JSON; a ``url`` part (a file by reference) as
one line naming it (mailslot never fetches it); a ``raw`` part (file bytes) is refused:
mail holds text (``ContentTypeNotSupportedError``). The subject is ``metadata.subject``
when the message gives one, else the first line of the text.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Artifact,
    HTTPAuthSecurityScheme,
    Message,
    Part,
    Role,
    SecurityRequirement,
    SecurityScheme,
    StringList,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.utils.errors import ContentTypeNotSupportedError, InvalidParamsError
from google.protobuf.json_format import MessageToDict

from ...core import __version__
from ...core.message import Message as Mail
from ...service import tasks
from ..bridge_server import subject_of

PROTOCOL_VERSION = "1.0"
SCHEME = "mailslot"
"""The security scheme's name in every card: the caller's own mailslot credential."""
STATES = {
    tasks.SUBMITTED: TaskState.TASK_STATE_SUBMITTED,
    tasks.WORKING: TaskState.TASK_STATE_WORKING,
    tasks.COMPLETED: TaskState.TASK_STATE_COMPLETED,
    tasks.CANCELED: TaskState.TASK_STATE_CANCELED,
    tasks.REJECTED: TaskState.TASK_STATE_REJECTED,
}
TERMINAL = frozenset(STATES[s] for s in tasks.TERMINAL)


def mail_of(message: Message) -> tuple[str, str]:
    """A ``SendMessage``'s subject and body (see the module's docstring)."""
    lines: list[str] = []
    for part in message.parts:
        kind = part.WhichOneof("content")
        if kind == "text":
            lines.append(part.text)
        elif kind == "data":
            lines.append("data:\n" + json.dumps(MessageToDict(part.data), indent=2,
                                                ensure_ascii=False))
        elif kind == "url":
            named = part.filename or "a file"
            shown = f" ({part.media_type})" if part.media_type else ""
            lines.append(f"file: {named}{shown}: {part.url}")
        else:
            raise ContentTypeNotSupportedError(
                message="mail holds text: send a file by url, or its text")
    body = "\n\n".join(line for line in lines if line.strip())
    if not body:
        raise InvalidParamsError(message="the message has no text to send")
    given = message.metadata.fields.get("subject") if message.HasField("metadata") else None
    subject = given.string_value.strip() if given is not None else ""
    return subject or subject_of(body), body


def task_of(task: tasks.MailTask, history: int | None = None) -> Task:
    """``task`` as an A2A ``Task``: its id the message's, its context the thread, its
    status the ladder's (the reply, or the note, as the status message), the reply as
    an artifact named ``reply``, the request in its history (``history``: at most that
    many messages; ``None``: all)."""
    mail = task.message
    context = mail.thread or mail.id
    status = TaskStatus(state=STATES[task.state])
    status.timestamp.FromDatetime(_when(task.changed))
    found = Task(id=mail.id, context_id=context, status=status)
    said = task.answer.body if task.answer is not None else task.note
    if said:
        found.status.message.CopyFrom(Message(
            role=Role.ROLE_AGENT, task_id=mail.id, context_id=context, parts=[Part(text=said)],
            message_id=task.answer.id if task.answer is not None else f"note-{mail.id}"))
    if task.answer is not None:
        found.artifacts.append(Artifact(artifact_id=f"reply-{task.answer.id}", name="reply",
                                        parts=[Part(text=task.answer.body)]))
    if history is None or history > 0:
        found.history.append(request_of(mail, context))
    return found


def request_of(mail: Mail, context: str) -> Message:
    """The stored message as the caller's A2A message (its subject in the metadata)."""
    sent = Message(role=Role.ROLE_USER, message_id=mail.id, task_id=mail.id,
                   context_id=context, parts=[Part(text=mail.body)])
    sent.metadata.update({"subject": mail.subject})
    return sent


def rejected(message: Message, reason: str) -> Task:
    """The answer to a send that stored nothing: a ``REJECTED`` task, with the reason.
    It was never stored, so asking for it later finds nothing."""
    task_id = str(uuid.uuid4())
    context = message.context_id or task_id
    status = TaskStatus(state=TaskState.TASK_STATE_REJECTED)
    status.timestamp.GetCurrentTime()
    status.message.CopyFrom(Message(role=Role.ROLE_AGENT, message_id=f"note-{task_id}",
                                    task_id=task_id, context_id=context,
                                    parts=[Part(text=reason)]))
    sent = Message()
    sent.CopyFrom(message)
    sent.task_id, sent.context_id = task_id, context
    return Task(id=task_id, context_id=context, status=status, history=[sent])


def card_of(name: str, url: str, *, push: bool) -> AgentCard:
    """Agent ``name``'s card, its endpoint at ``url`` (JSON-RPC and HTTP+JSON)."""
    return AgentCard(
        name=name,
        description=(f"The mailslot agent {name}: a message becomes mail in its inbox, "
                     "and the task completes with its reply."),
        version=__version__,
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding=binding,
                           protocol_version=PROTOCOL_VERSION)
            for binding in ("JSONRPC", "HTTP+JSON")],
        capabilities=AgentCapabilities(streaming=True, push_notifications=push),
        security_schemes={SCHEME: SecurityScheme(
            http_auth_security_scheme=HTTPAuthSecurityScheme(
                scheme="bearer",
                description="the caller's own mailslot credential: the caller is the sender"))},
        security_requirements=[SecurityRequirement(schemes={SCHEME: StringList()})],
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(
            id="mail", name="mail", tags=["mail", "mailbox"],
            description=(f"Leave {name} a message; it is read when {name} next looks at "
                         "its mail, and its reply completes the task."),
            examples=["please review the change on branch fix-login"])],
    )


def _when(text: str) -> datetime:
    """An ISO 8601 time of the ladder, as a UTC datetime (now, if it cannot be read)."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return datetime.now(UTC)
    if moment.tzinfo is None:
        moment = moment.astimezone()
    return moment.astimezone(UTC)
