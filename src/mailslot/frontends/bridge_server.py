"""``mailslot bridge HOST``: mailslot's agents as targets of a host's own messaging.

A host whose sessions message each other through a registry of live sessions (one record
per process, each naming a socket) can list mailslot's other agents too: the bridge runs
one small process per listed agent, and each writes its own record and serves its own
socket. What a session writes there becomes mailslot mail to that agent **from the
sending session's own agent**: the kernel's peer pid of the connection names the sending
process, its own registry record names its session, and the hook records mailslot keeps
name the agent that session is. Nothing the frame says about its sender counts.

The host's module says what the records and frames are (:meth:`Host.bridge
<mailslot.host_registry.host.Host.bridge>`, an object answering ``host``, ``tool``, ``mark`` and
``registry`` (the key its records carry and the folder of records, for a hook's raw
look), ``problem``, ``socket_folder``, ``announce``, ``live``, ``bridges``, ``sender``,
``frame`` and ``refusal``; and, for a door that asks a token on each connection and answers every
message, ``admit`` and ``delivered``); this module holds the rest: which agents are
listed, the supervisor, one target's server and its limits. A bridged send is an
ordinary send, through the service (the loop governor, gates and the registered agents'
credentials apply). Linux only: the peer pid is ``SO_PEERCRED``'s. The host's page of
docs/ says what was seen.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any, TextIO

from ..access.identity import Identity
from ..backends import handed_over, open_store
from ..core import jsontext, local_socket
from ..core.durable import read_file
from ..core.errors import InvalidInput, MailslotError, UnsafePath
from ..core.names import check_name, session_key
from ..core.text import MAX_SUBJECT_LENGTH
from ..service.mailbox import Mailbox
from ..store import Store
from ..wake.line_socket import DoorError, own_socket, send_lines

MAX_LINE = 1 << 20
"""The longest line a target reads (the host's own door's limit); a longer one drops the
connection and sends nothing."""
CONNECTION_SECONDS = 10.0
"""How long one connection may take to send its lines."""
MAX_CONNECTIONS = 8
"""Connections one target serves at once; more are closed at once."""
MAX_TARGETS = 32
"""Agents listed at most (one process each), the first by name."""
REFRESH_SECONDS = 2.0
"""How often the supervisor looks again at which agents to list."""
RECEIPT_SECONDS = 2.0
SOURCE = "bridge"
"""The identity source of a bridged send (``Identity.source``)."""


def shapes_of(host_name: str) -> Any:
    """The host's bridge shapes; ``InvalidInput`` for a host that has none."""
    from .. import host_registry as hosts

    try:
        found = hosts.host(host_name).bridge()
    except KeyError:
        found = None
    if found is None:
        raise InvalidInput(f"{host_name!r} has no messaging of its own to bridge (one of: "
                           f"{', '.join(hosts.BRIDGED)})")
    return found


def agent_of(store: Store, host: str, session: str) -> str | None:
    """The one agent whose hooks ran in ``host``'s session ``session``; ``None``: none,
    or more than one (which would make the sender a guess)."""
    key = session_key(session)
    agents = {str(r["agent"]) for r in store.hook_sessions()
              if r.get("host") == host and r.get("session") == key}
    return agents.pop() if len(agents) == 1 else None


def targets(store: Store, shapes: Any, env: Mapping[str, str]) -> list[str]:
    """The agents to list: every agent the mailbox knows, but those that are a live
    session of the host on this machine (each already lists itself, and is never
    listed to itself)."""
    live = {agent_of(store, shapes.host, peer.session) for peer in shapes.live(env)}
    return [a for a in sorted(Mailbox(store).known_agents()) if a not in live][:MAX_TARGETS]


class Supervisor:
    """Starts one target process per agent to list, stops those no longer listed, and
    starts a target again that ended. Forks, so it must run with no other thread."""

    def __init__(self, store: Store, shapes: Any, out: TextIO,
                 env: Mapping[str, str] = os.environ) -> None:
        self.store = store
        self.shapes = shapes
        self.out = out
        self.env = env
        self.children: dict[str, int] = {}
        self.stopping = False
        self._told = ""

    def say(self, line: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {line}", file=self.out, flush=True)

    def run(self) -> int:
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "stopping", True))
        self.say(f"bridging {self.store.location} into {self.shapes.host}'s "
                 f"{self.shapes.tool}; Ctrl-C stops")
        try:
            while not self.stopping:
                self.step()
                time.sleep(REFRESH_SECONDS)
        except KeyboardInterrupt:
            pass
        finally:
            self.stop_all()
        return 0

    def step(self) -> None:
        """One look: reap ended targets, stop the unlisted, start the missing."""
        self._reap()
        problem = self.shapes.problem(self.env)
        try:
            wanted = [] if problem else targets(self.store, self.shapes, self.env)
        except MailslotError as exc:
            problem, wanted = f"cannot read the mailbox: {exc}", list(self.children)
        if problem and problem != self._told:
            self.say(problem)
        self._told = problem or ""
        for agent, pid in list(self.children.items()):
            if agent not in wanted:
                self.say(f"{agent}: no longer listed (pid {pid})")
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGTERM)
                del self.children[agent]
        for agent in wanted:
            if agent not in self.children:
                self.children[agent] = self._fork(agent)
                self.say(f"{agent}: listed (pid {self.children[agent]})")

    def _fork(self, agent: str) -> int:
        self.out.flush()
        pid = os.fork()
        if pid == 0:  # the target: its own store, its own record; never returns
            code = 1
            try:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                code = Target(open_store(self.store.address, self.env), self.shapes, agent,
                              self.out, self.env).serve()
            except BaseException as exc:
                with contextlib.suppress(Exception):
                    self.say(f"{agent}: stopped: {type(exc).__name__}: {exc}")
            finally:
                with contextlib.suppress(Exception):
                    self.out.flush()
                os._exit(code)
        return pid

    def _reap(self) -> None:
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            for agent, child in list(self.children.items()):
                if child == pid:
                    del self.children[agent]  # started again at this look

    def stop_all(self) -> None:
        for pid in self.children.values():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
        for pid in self.children.values():
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)
        self.children.clear()


class Target:
    """One listed agent: a registry record of this process and the socket it names."""

    def __init__(self, store: Store, shapes: Any, agent: str, out: TextIO,
                 env: Mapping[str, str]) -> None:
        self.store = store
        self.shapes = shapes
        self.agent = check_name(agent, "agent")
        self.out = out
        self.env = env
        self.parent = os.getppid()
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._stop = threading.Event()
        self.path = ""

    def say(self, line: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {self.agent}: {line}", file=self.out, flush=True)

    def serve(self) -> int:
        """Until SIGTERM or the supervisor ends: take connections, one thread each."""
        signal.signal(signal.SIGTERM, lambda *_: self._stop.set())
        folder = private_folder(self.shapes.socket_folder(self.env))
        self.path = os.path.join(folder, f"{os.getpid()}.sock")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)  # a socket of a dead process of this pid, in our folder
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        record = ""
        try:
            server.bind(self.path)
            os.chmod(self.path, 0o600)
            server.listen(16)
            record = self.shapes.announce(self.agent, self.path, self.store.location,
                                          self.env)
            while not self._stop.is_set() and os.getppid() == self.parent:
                ready, _, _ = select.select([server], [], [], 0.5)
                if ready:
                    self._accept(server)
        finally:
            server.close()
            with contextlib.suppress(OSError):
                os.unlink(self.path)
            if record:
                withdraw(record)
        return 0

    def _accept(self, server: socket.socket) -> None:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        if not self._slots.acquire(blocking=False):
            conn.close()  # too many at once: the sender's tool says it failed
            return
        threading.Thread(target=self._serve_one, args=(conn,), daemon=True).start()

    def _serve_one(self, conn: socket.socket) -> None:
        try:
            with conn:
                pid, uid = local_socket.peer_of(conn)
                lines = read_lines(conn, CONNECTION_SECONDS)
                admit = getattr(self.shapes, "admit", None)  # a door that asks a token
                for line in lines if admit is None else admit(lines):
                    self.take(line, pid, uid)
        except DoorError as exc:
            self.say(f"dropped a connection: {exc}")
        except Exception as exc:  # one connection's trouble must not end the target
            self.say(f"dropped a connection: {type(exc).__name__}: {exc}")
        finally:
            self._slots.release()

    def take(self, line: str, pid: int, uid: int) -> str | None:
        """Mail for one line from process ``pid``: the new message's id, or ``None``
        (a line without a message, or refused; what was refused is logged)."""
        try:
            frame = self.shapes.frame(line)
        except DoorError as exc:
            self.say(f"refused a line from pid {pid}: {exc}")
            return None
        if frame is None:
            return None
        try:
            if uid != os.geteuid():
                raise DoorError(f"uid {uid} is not this user")
            peer = self.shapes.sender(pid, self.env)
        except DoorError as exc:  # not bound: no mail, and no receipt to a claimed socket
            self.say(f"refused a message from pid {pid}: {exc}")
            return None
        sender = agent_of(self.store, self.shapes.host, peer.session)
        if sender is None:
            self._refuse(frame, peer, (
                f"This session has no mailslot agent (no mailslot hook recorded session "
                f"{peer.session}, or more than one agent did), so the message to "
                f"{self.agent} was not delivered; run `mailslot install "
                f"{self.shapes.host} --hooks --agent NAME`."))
            return None
        try:
            sent = Mailbox(self.store, Identity(sender, SOURCE)).send(
                self.agent, subject_of(frame.text), frame.text)
        except MailslotError as exc:
            reason = f"mailslot refused the message to {self.agent}: {exc}"
            self._refuse(frame, peer, reason)
            self._tell(sender, reason)
            return None
        self.say(f"{sent.sender} -> {self.agent}: {sent.id} (from pid {pid})")
        if hasattr(self.shapes, "delivered"):  # a door that answers every message
            self._answer(frame, peer, self.shapes.delivered(frame, self.path))
        return sent.id

    def _tell(self, sender: str, reason: str) -> None:
        """The sending session's agent hears why, as mail: the host shows its model only
        its own fixed words for a refusal, never the receipt's reason (seen)."""
        from ..mail.posting import Notifier

        try:
            Notifier(self.store).tell(sender, f"Not delivered to {self.agent}", (
                f"Your SendMessage to {self.agent} (through mailslot's bridge) was not "
                f"delivered. {reason}\n"))
        except MailslotError as exc:
            self.say(f"could not tell {sender}: {exc}")

    def _refuse(self, frame: Any, peer: Any, reason: str) -> None:
        """Log it, and tell the sender when its ``from`` is its own registered socket."""
        self.say(f"refused a message from pid {peer.pid}: {reason}")
        self._answer(frame, peer, self.shapes.refusal(frame, self.path, reason))

    def _answer(self, frame: Any, peer: Any, receipt: Any) -> None:
        """Send ``receipt`` (one line, or a list of them) when the frame's ``from`` is
        the sender's own registered socket."""
        if frame.msg_id is None or peer.socket is None or frame.reply_to != peer.socket:
            return
        try:
            own_socket(peer.socket)
            send_lines(peer.socket, receipt if isinstance(receipt, list) else [receipt],
                       RECEIPT_SECONDS)
        except DoorError as exc:
            self.say(f"could not tell pid {peer.pid}: {exc}")


def subject_of(text: str) -> str:
    """A bridged message's subject: its first line that has text, cut short."""
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    limit = min(80, MAX_SUBJECT_LENGTH)
    return (first[:limit - 1] + "…" if len(first) > limit else first) or "(no subject)"


def read_lines(conn: socket.socket, seconds: float) -> list[str]:
    """Every line of one connection, read until it ends or ``seconds`` pass (a last
    line needs no newline). Raises ``DoorError`` for a line over :data:`MAX_LINE`."""
    deadline = time.monotonic() + seconds
    data, lines = b"", []
    while (left := deadline - time.monotonic()) > 0:
        conn.settimeout(left)
        try:
            chunk = conn.recv(65536)
        except TimeoutError:
            break
        except OSError as exc:
            raise DoorError(f"the connection failed: {exc.strerror or exc}") from None
        if not chunk:
            break
        data += chunk
        *done, data = data.split(b"\n")
        lines += done
        if len(data) > MAX_LINE or any(len(d) > MAX_LINE for d in done):
            raise DoorError(f"a line over {MAX_LINE} bytes")
    lines.append(data)
    return [t for t in (ln.decode("utf-8", "replace") for ln in lines) if t.strip()]


def private_folder(path: str) -> str:
    """``path``, a folder (not a link) of this user's that no one else may enter."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    if not local_socket.private_folder(path):
        raise DoorError(f"{path} is not a private folder of this user's (mode 0700)")
    return path


def withdraw(record: str) -> None:
    """Remove this process's registry record, if it is still the one it wrote."""
    try:
        data = jsontext.loads(read_file(record, 64 * 1024))
    except (OSError, ValueError, UnsafePath):
        return
    if isinstance(data, dict) and data.get("pid") == os.getpid():
        with contextlib.suppress(OSError):
            os.unlink(record)


def configured(config: Mapping[str, Any]) -> list[str]:
    """``bridges`` in config.json: the hosts whose bridge the watcher runs (opt-in)."""
    from .. import host_registry as hosts

    raw = config.get("bridges") if isinstance(config, Mapping) else None
    names = [n for n in raw if isinstance(n, str)] if isinstance(raw, list) else []
    return [n for n in names if n in hosts.NAMES and hosts.host(n).bridge() is not None]


def start_bridges(store: Store, config: Mapping[str, Any], out: TextIO
                  ) -> list[subprocess.Popen[bytes]]:
    """The configured bridges, each ``mailslot bridge HOST`` as a child of the watcher
    (its lines in the watcher's output), stopped by :func:`stop_bridges`."""
    if not hasattr(socket, "SO_PEERCRED"):
        return []
    started = []
    named, told = handed_over(store)  # a database's password in the environment only
    env = {**os.environ, **told}
    for name in configured(config):
        argv = [sys.executable, "-m", "mailslot", *named, "bridge", name]
        try:
            started.append(subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                            stderr=subprocess.STDOUT, env=env))
        except (AttributeError, OSError, ValueError):  # out has no file: inherit stdout
            started.append(subprocess.Popen(argv, stdin=subprocess.DEVNULL, env=env))
    return started


def stop_bridges(started: list[subprocess.Popen[bytes]]) -> None:
    for proc in started:
        with contextlib.suppress(OSError):
            proc.terminate()
    for proc in started:
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def bridge(store: Store, host_name: str, out: TextIO | None = None) -> int:
    """Run the bridge for ``host_name`` until stopped (Ctrl-C, SIGTERM)."""
    if not hasattr(socket, "SO_PEERCRED"):
        raise InvalidInput("the bridge needs the kernel's peer credentials (Linux)")
    return Supervisor(store, shapes_of(host_name), out or sys.stdout).run()
