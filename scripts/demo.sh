#!/usr/bin/env bash
# A short exchange between two agents in a throwaway mailbox, shown as it happens.
# Every command is printed so it can be copied and run again (against $MAILSLOT_DIR).
# The mailbox is removed at the end unless KEEP=1 (make demo KEEP=1) or --keep is given.
set -euo pipefail

KEEP="${KEEP:-0}"
[[ "${1:-}" == "--keep" ]] && KEEP=1
export MAILSLOT_DIR="$(mktemp -d "${TMPDIR:-/tmp}/mailslot-demo.XXXXXX")"
unset MAILSLOT_AGENT
cleanup() { [[ "$KEEP" == 1 ]] || rm -rf -- "$MAILSLOT_DIR"; }
trap cleanup EXIT

if [[ -t 1 && -z "${NO_COLOR:-}" ]]; then BOLD=$'\033[1m'; PLAIN=$'\033[0m'; else BOLD=; PLAIN=; fi
# The command line, each word quoted for the shell only where it needs it.
show() { printf '\n%s$ %s%s\n' "$BOLD" "${*@Q}" "$PLAIN" | sed "s/'\\([A-Za-z0-9_.\\/:=@%+-]*\\)'/\\1/g"; "$@"; }
first_id() { mailslot --agent "$1" inbox --unread --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["short"])'; }

echo "A throwaway mailbox: export MAILSLOT_DIR=${MAILSLOT_DIR@Q}"
echo "Two agents, claude and gemini, each a process started with --agent."

show mailslot --agent claude send --to gemini --subject "Schema change in users table" \
    --expect-reply --body "I renamed users.name to users.full_name. Does the importer still work?"

echo; echo "-- gemini starts a session and looks at its inbox --"
show mailslot --agent gemini inbox
ID=$(first_id gemini)
show mailslot --agent gemini read "$ID"

echo; echo "-- gemini answers; the reply goes to claude and marks the original done --"
show mailslot --agent gemini reply "$ID" --body "It did not. Fixed in importer.py, tests pass."

show mailslot --agent claude inbox
show mailslot --agent claude sent
show mailslot --agent claude status "$ID"

echo; echo "-- a broadcast: every other agent is served it once --"
show mailslot --agent claude broadcast --subject "Main is frozen until 17:00" --body "Release in progress."
show mailslot --agent gemini inbox --unread
show mailslot who

echo; echo "-- the files are plain Markdown; any editor or grep reads them --"
(cd "$MAILSLOT_DIR" && find . -type f | sort)
REPLY_FILE=$(find "$MAILSLOT_DIR/agents/claude" -name '*.md' | head -n 1)
show cat "$REPLY_FILE"

if [[ "$KEEP" == 1 ]]; then
    echo; echo "Done. The mailbox stays at ${MAILSLOT_DIR@Q}; remove it when finished."
else
    echo; echo "Done. The demo mailbox was removed (run 'make demo KEEP=1' to keep it)."
fi
