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

from mailslot.cli import build_parser

DOC = Path(__file__).resolve().parent.parent / "docs" / "cli.md"
WIDTH = "100"
INTRO = """\
# mailslot command line

Generated from `mailslot --help` by `scripts/gen_cli_docs.py`; do not edit by hand
(run `python scripts/gen_cli_docs.py` after changing a command).

Every command accepts `--dir D` (the mailbox folder; default `$MAILSLOT_DIR`, then
`~/mailslot`) and `--agent A` (who this process speaks as; default `$MAILSLOT_AGENT`, then
the git toplevel's folder name), before or after the command name. Exit codes: `0` ok;
`1` the operation failed (no such message, a refused action, an unusable mailbox); `2` bad
input or usage, as one line `mailslot: error: ...` on stderr with nothing written.
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
