"""The command lines README.md and docs/cli.md show, run in order in a fresh mailbox, as
real processes: each must succeed as written.

A doc names a message by a placeholder (``ID``, or a short form such as ``7f3a9c2e``);
the run puts in the real message of that form (the whole id, or its random tail), so
what is checked is that the form the doc teaches resolves. The few lines not run say
why below: they need something a fresh mailbox on one machine cannot have.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pyrage

from mailslot.backends.files.file_store import FileStore
from mailslot.core.ids import sender_of
from mailslot.core.message import STATES

ROOT = Path(__file__).resolve().parent.parent
NOT_RUN = {
    "claude@1a2b3c4d": "a live session of claude",
    "postgresql://": "a PostgreSQL server at db.example",
    "--remote https://": "a 'mailslot serve --http' server at mail.example.org",
    "mailslot serve": "runs until its client leaves",
    "mailslot web": "runs until Ctrl-C",
    "mailslot watch": "runs until Ctrl-C",  # watch --validate is run (below)
    "mailslot bridge": "runs until Ctrl-C",
    "mailslot sidecar": "runs until the host's app ends it, started by the app",
    "mailslot start": "starts claude, a host program",
    "< input.json": "a host's hook payload",
    "--if-version": "the version a config show printed",
    "--hooks --wake": "probes the host's program, not installed here",
    "doctor --wake": "the wake install --hooks --wake chose",
    "--wait surfaced": "waits for a model to be shown the mail (tests/test_ladder.py)",
    "mailslot peer add": "ssh to another machine (tests/test_peers_ssh.py has a real sshd)",
    "@laptop": "a peer named laptop",
}
RUN_ANYWAY = ("mailslot watch --validate",)
SHORT = re.compile(r"^(ID|[0-9a-f]{6,8}|\d{4}-\d\d-\d\d_\d{4})$")
"""A doc's stand-in for a message: ``ID``, a random tail, or the start of an id."""


def readme_lines() -> list[str]:
    """Every ``mailslot`` line of README.md's shell blocks (piped input included)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```sh\n(.*?)^```", text, re.M | re.S)
    return [line for block in blocks for line in block.splitlines()
            if re.match(r"(echo .*\| )?mailslot ", line)]


def cli_doc_lines() -> list[str]:
    """Every example of docs/cli.md (each command's ``examples:``)."""
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    return re.findall(r"^  (mailslot .*)$", text, re.M)


def runnable(line: str) -> bool:
    return line.startswith(RUN_ANYWAY) or not any(k in line for k in NOT_RUN)


class Run:
    """The mailbox at ``~/mailslot`` of a fresh home, and the doc's lines run in it."""

    def __init__(self, home: Path, agent: str) -> None:
        self.home, self.agent = home, agent
        self.work = home / "work"
        self.work.mkdir(parents=True)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("MAILSLOT_")}
        self.env.update(HOME=str(home), MAILSLOT_AGENT=agent)
        self.env.pop("XDG_CONFIG_HOME", None)
        self.key = pyrage.x25519.Identity.generate()

    def ids(self, agent: str | None = None) -> list[str]:
        """The messages in ``agent``'s mailbox (else every one), newest first."""
        store = FileStore(self.home / "mailslot")
        found = set(store.broadcast_ids()) if agent is None else set()
        for name in store.agent_names() if agent is None else [agent]:
            found |= {i for i, _ in store.entries(name, STATES)}
        return sorted(found, reverse=True)

    def fill(self, words: list[str], agent: str) -> list[str]:
        """The doc's message placeholders as real messages of the same form: the
        agent's own newest mail first (for ``retract``: what it sent)."""
        ids = self.ids()
        mine = ([i for i in ids if sender_of(i) == agent] if "retract" in words
                else self.ids(agent))
        pool = iter(mine + [i for i in ids if i not in mine])
        out = []
        for word in words:
            if SHORT.match(word):
                word = self.same_form(word, next(pool), ids)
            out.append(re.sub(r"^age1[0-9a-z.]+$", str(self.key.to_public()), word))
        return out

    @staticmethod
    def same_form(word: str, real: str, ids: list[str]) -> str:
        """``real`` in the form of the doc's ``word``: whole for ``ID``; the start of its
        random tail, as long as the doc's; the start of the id, as long as the doc's or
        as much longer as it takes to be unique (the doc's was made in another minute)."""
        if word == "ID":
            return real
        if "-" not in word:
            return real.rsplit("_", 1)[1][:len(word)]
        size = len(word)
        while sum(i.startswith(real[:size]) for i in ids) > 1:
            size += 1
        return real[:size]

    def line(self, line: str) -> subprocess.CompletedProcess[bytes]:
        stdin = b""
        if line.startswith("echo "):
            said, line = line.split(" | ", 1)
            stdin = shlex.split(said)[1].encode() + b"\n"
        words = shlex.split(line, comments=True)
        words = [w.strip("[]") for w in words]  # [--option]: an optional one, given
        words = [str(self.home) + w[1:] if w.startswith("~/") else w for w in words]
        out = None
        if ">" in words:
            at = words.index(">")
            out, words = self.work / words[at + 1], words[:at]  # the shell's >
            out.parent.mkdir(parents=True, exist_ok=True)
        agent = words[words.index("--agent") + 1] if "--agent" in words else self.agent
        argv = [sys.executable, "-m", "mailslot", *self.fill(words[1:], agent)]
        env = self.env
        if "outside any git checkout" in line:  # the person, as the doc's comment says
            env = {k: v for k, v in self.env.items() if k != "MAILSLOT_AGENT"}
        ran = subprocess.run(argv, input=stdin, capture_output=True, cwd=self.work,
                             env=env, timeout=120, check=False)
        if b"confirm with --yes (not on a terminal)" in ran.stderr:  # the doc's user has one
            ran = subprocess.run([*argv, "--yes"], input=stdin, capture_output=True,
                                 cwd=self.work, env=self.env, timeout=120, check=False)
        if out is not None:
            out.write_bytes(ran.stdout)
        return ran


def run_all(run: Run, lines: list[str]) -> None:
    assert lines  # the docs still have examples where this looks
    for line in filter(runnable, lines):
        ran = run.line(line)
        assert ran.returncode == 0, f"`{line}` failed: {ran.stderr.decode()}"


def setting(run: Run, agent: str = "gemini", typo: str = "gemnii",
            sender: str = "claude") -> None:
    """What the docs take as there: mail waiting for ``agent``, a mistyped mailbox
    (``typo``) to remove, and the other mailboxes it imports from."""
    (run.home / ".letterbox" / "channels").mkdir(parents=True)  # an empty letterbox
    (run.home / ".agents-mailbox").mkdir()  # and an empty a2a-mailbox
    keys = run.home / "keys"  # the age key the docs' backups are encrypted to
    keys.mkdir()
    (keys / "mailslot.txt").write_text(f"{run.key}\n")
    (keys / "mailslot.txt").chmod(0o600)
    for to in (agent, agent, agent, typo):
        seed = [sys.executable, "-m", "mailslot", "--agent", sender, "send", "--to", to,
                "--subject", "s", "--body", "b", "--new"]
        subprocess.run(seed, env=run.env, cwd=run.work, check=True, capture_output=True)


def test_the_readme_examples_run(tmp_path: Path) -> None:
    run = Run(tmp_path / "home", "work")
    setting(run)
    run_all(run, readme_lines())


def test_the_cli_reference_examples_run(tmp_path: Path) -> None:
    run = Run(tmp_path / "home", "reviewer")  # the reference's examples are reviewer's
    setting(run, "reviewer", "reveiwer", "builder")
    gate = [sys.executable, "-m", "mailslot", "gate", "on"]  # builder asks to join it
    subprocess.run(gate, env=run.env, cwd=run.work, check=True, capture_output=True)
    owner = [sys.executable, "-m", "mailslot", "config", "set", "owner", "sarah"]  # pauses
    person = {k: v for k, v in run.env.items() if k != "MAILSLOT_AGENT"}  # no identity
    subprocess.run(owner, env=person, cwd=run.work, check=True, capture_output=True)
    run_all(run, cli_doc_lines())


def test_each_kind_of_line_left_out_is_still_in_the_docs() -> None:
    """What is not run is only what ``NOT_RUN`` names, each for a reason a doc line
    still has (docs/security.md says what these are): a kind no line needs any more
    goes, so the list cannot grow stale and hide lines."""
    lines = readme_lines() + cli_doc_lines()
    assert [k for k in NOT_RUN if not any(k in line for line in lines)] == []
    assert [line for line in lines if not runnable(line)]  # some are left out, for those
