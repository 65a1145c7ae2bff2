#!/usr/bin/env bash
# A short exchange between two agents in a throwaway mailbox, shown as it happens.
set -euo pipefail

export MAILSLOT_DIR="$(mktemp -d "${TMPDIR:-/tmp}/mailslot-demo.XXXXXX")"
unset MAILSLOT_AGENT

show() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }
first_id() { mailslot --agent "$1" inbox --unread --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])'; }

echo "A throwaway mailbox at $MAILSLOT_DIR"
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
show mailslot status "$ID"

echo; echo "-- a broadcast: every other agent is served it once --"
show mailslot --agent claude broadcast --subject "Main is frozen until 17:00" --body "Release in progress."
show mailslot --agent gemini inbox --unread
show mailslot who

echo; echo "-- the files are plain Markdown; any editor or grep reads them --"
(cd "$MAILSLOT_DIR" && find . -type f | sort)
REPLY_FILE=$(find "$MAILSLOT_DIR/agents/claude" -name '*.md' | head -n 1)
show cat "$REPLY_FILE"

echo; echo "Done. The mailbox stays at $MAILSLOT_DIR for you to look at; remove it when finished."
