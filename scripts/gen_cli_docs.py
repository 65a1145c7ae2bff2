"""Write docs/cli.md from the CLI's own ``--help`` text, so the reference cannot drift.

    python scripts/gen_cli_docs.py          # rewrite docs/cli.md
    python scripts/gen_cli_docs.py --check  # exit 1 if docs/cli.md is stale

tests/test_docs.py runs the check. Help is rendered at a fixed width without colour, so
the file does not depend on the terminal it was generated in.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mailslot.frontends.cli.parser import build_parser

DOC = Path(__file__).resolve().parent.parent / "docs" / "cli.md"
WIDTH = "100"
INTRO = """\
# mailslot command line

Generated from `mailslot --help` by `scripts/gen_cli_docs.py`; do not edit by hand
(run `python scripts/gen_cli_docs.py` after changing a command).

Every command accepts the global options before or after the command name: `--dir D`
(the mailbox folder or a `postgresql://` URL, also spelled `--store`; default
`$MAILSLOT_STORE`, then `$MAILSLOT_DIR`, then `~/mailslot`), `--agent A` (who this
process speaks as; default `$MAILSLOT_AGENT`, then the git toplevel's folder name, except
for `serve` and `install`, which need one of the first two), `--json` and `--no-color`.

**Exit codes and errors.** `0` ok; `1` the operation failed (no such message, a refused
action, an unusable mailbox); `2` bad input or usage. Either way stderr gets one line,
`mailslot: error: ...`, and nothing is written; with `--json` that line is
`{"error": "...", "code": "...", "exit": N}` (`code`: `usage`, `invalid_input`,
`no_identity`, `not_found`, `refused`, `failed`). Names and ids in errors are quoted and
escaped once (`'evil\nname'`). A mistyped command gets "did you mean" (two edits at most).
Notes that are not errors (a new mailbox was made, a wake was not allowed) go to stderr
as `mailslot: note: ...`. A usage error points at the command's own help (`see 'mailslot
send --help'`).

**A mailbox that is not there.** A command that only reads, checks or acts on what a
mailbox already holds (`inbox`, `read`, `who`, `doctor`, `status`, `sent`, `search`,
`thread`, `sessions`, `config show|get|export`, `export`, `backup`, `watch --validate`,
...) pointed at a folder that does not exist, a folder of other files, or a database
without mailslot's schema (a mistyped `--dir`) says `no mailbox at PATH: mailslot init
PATH, or check --dir/MAILSLOT_DIR` (exit 1) and creates nothing; `whoami` says it as a
note. A send, a broadcast and `mailslot init [DIR|URL]` create the mailbox; the hooks
stay silent.

**Bodies.** `send`, `reply` and `broadcast` take the body from `--body` or stdin. A stdin
that gives nothing but white space (an agent's shell runs commands with an empty stdin)
is refused in one line and nothing is sent; `--body ''` sends an empty message.

**Identity.** `mailslot whoami` shows the name, where it came from and the mailbox. A git
toplevel's folder name becomes an agent name by one rule: ASCII-folded, lowercased, `_`,
`.` and spaces turned into `-`, repeated `-` collapsed, `-` trimmed from the ends
(`My_App` → `my-app`, `foo.js` → `foo-js`, `Über` → `uber`); a folder that still makes
no valid name (`___`), or a reserved one (`_under`: a name starting with `_` is reserved,
so it is refused as `--agent _under` is, never taken as `under`), is refused with a line
asking for `--agent NAME`. When your own name is one the mailbox does not know (no
mailbox, not in the config, never sent) and a known agent's is within two edits, `inbox`
and `sent` add a note: `did you mean alice?`.

**Message ids** may be given whole, as any unique prefix of 6 characters or more, or as
their random tail (the last `_` part, as `inbox` shows it), like git's short hashes. An
ambiguous one is refused (exit 2) with the candidates. `read`, `mark-read`, `done` and
`reply` look among your own mail and the broadcasts; `status` and `retract` also among
what you sent (run without any identity, as the person owning the folder, or as the
config's `owner`: among every mailbox). Lists show the shortest form that names the
message uniquely: its random tail, or the whole id where another message shares the
tail; `--json` gives that form as `short` wherever a message is shown (`inbox`, `read`,
`mark-read`, `search`, `sent`).

**Recipients.** Sending to a name that has no mailbox and is within two edits of a known
agent (a mailbox, `config.json`'s agents, the owner) is refused with "did you mean" and
the known agents; `send --new` (MCP: `new=true`) sends anyway. A genuinely new name is
accepted with a note. `--to all` is refused with a pointer to `broadcast`.
`mailslot agent remove NAME` moves a mailbox whole to `archive/` (see docs/format.md): kept
on disk, gone from `who` unless `config.json` or a running server still names it.

**Lists.** `inbox` marks `*` unread, `·` read but not done, `✓` done, and ends with how many
more there are and the `--before ID` that shows them (or use `--page N`); when only done
mail is left it says so and points to `--all`. `sent` lists what you sent with each
recipient's state. Dates are stored in UTC and shown in your local time with its zone.
`who`'s columns: unread count (including broadcasts not yet served), whether an MCP
server of the agent is online (or when it was last seen), how its config lets it be
woken, and where mailslot knows the name from (`owner`, `config`, `mailbox`, `messages`,
`server`).

**The delivery ladder.** `status ID` shows, per recipient, how far a message got:
stored → wake (the newest attempt: method, outcome, time, reason) → **surfaced** (first
shown to a model: when, in which host and session, and how: session start, a prompt,
mid-turn, stop, a tool read or a wake notice, and how many times) → read → done →
replied. Surfaced is recorded only after the host took the output that carried it
(docs/hooks.md); a read through the CLI is "read". Mail no model was shown yet says why
it waits (no live session and no wake, no watcher to wake it, the wake gave up, ...).
`sent` shows each recipient's rung. `send --notify-when surfaced|read|done` has mailslot
send you one notice when the first recipient reaches that rung (reaching a later rung
counts). `status ID --wait RUNG --timeout SECONDS` (default 60) blocks until a
recipient reaches RUNG, polling from a tenth of a second up to two seconds apart; on
timeout it exits 1 with one error line (`mailslot: error: timed out: ...`, code
`failed` with `--json`) naming where each recipient is. `who` ends
with a line for each agent whose unread mail no model was shown for longer than
`unsurfaced_after_minutes` in config.json (default 60); it looks at the 200 oldest
such messages of an agent, and says "at least" when more wait. It looks for their
showings in the newest 2,000 lines of the events log only, so it costs the same
however long the log: mail shown only before those (its agent has had no new session
since) counts as not shown; `status ID` reads back to the message's delivery.

**Terminal.** Colour only when stdout is a terminal, never with `NO_COLOR` or
`--no-color`; `read` output taller than the terminal goes through `$PAGER` (default
`less -FRX`). Shell completion: `mailslot completion bash|zsh|fish` prints a script
that completes commands, agent names (after `--to`, `--for`, `--agent`) and your message
ids.
"""


def commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Every subcommand's parser, in the order the CLI defines them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


@contextmanager
def _fixed_terminal() -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in ("COLUMNS", "NO_COLOR")}
    os.environ.update(COLUMNS=WIDTH, NO_COLOR="1")
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def render() -> str:
    """The whole of docs/cli.md."""
    parser = build_parser()
    with _fixed_terminal():
        sections = [INTRO, "## mailslot\n\n```text\n" + parser.format_help() + "```\n"]
        for name, sub in commands(parser).items():
            sections.append(f"## mailslot {name}\n\n```text\n{sub.format_help()}```\n")
    return "\n".join(sections)


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not DOC.exists() or DOC.read_text(encoding="utf-8") != text:
            print(f"{DOC} is stale: run python scripts/gen_cli_docs.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
