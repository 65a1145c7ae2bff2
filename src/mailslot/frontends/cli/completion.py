"""Shell completion: ``mailslot completion bash|zsh|fish`` prints a script.

The scripts complete command names from the list baked in when they were printed, and
ask ``mailslot completion --words agents|ids`` (with the command line's own ``--dir`` and
``--agent``) for agent names after ``--to``/``--for``/``--agent`` and for message ids
after the commands that take one. The words come from the service, so they are the
names and short ids ``who`` and ``inbox`` show.
"""

from __future__ import annotations

from ...service.mailbox import Mailbox

ID_COMMANDS = ("read", "mark-read", "done", "reply", "retract", "status")
AGENT_OPTIONS = ("--to", "--for", "--agent")
_SHOWN_IDS = 50


def words(box: Mailbox, kind: str) -> list[str]:
    """Agent names, or the short ids of my open mail and of what I sent recently."""
    if kind == "agents":
        return box.known_agents()
    if kind == "ids":
        found = [i.shown_id for i in box.inbox(limit=_SHOWN_IDS)]
        found += [s.short or s.message.id for s in box.sent(limit=_SHOWN_IDS)]
        return list(dict.fromkeys(found))
    return []


def script(shell: str, commands: list[str]) -> str:
    """The completion script for ``shell``, with ``commands`` baked in."""
    names = " ".join(commands)
    ids = " ".join(ID_COMMANDS)
    agent_opts = "|".join(AGENT_OPTIONS)
    if shell == "bash":
        return _BASH.format(names=names, ids=ids.replace(" ", "|"), agent_opts=agent_opts)
    if shell == "zsh":
        return _ZSH.format(names=names, ids=ids.replace(" ", "|"), agent_opts=agent_opts)
    return _FISH.format(names=names, ids=ids)


_BASH = """\
# mailslot completion for bash: eval "$(mailslot completion bash)" in ~/.bashrc
_mailslot() {{
    local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}}
    local cmd="" i w
    local -a opts=()
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${{COMP_WORDS[i]}}
        case $w in
            --dir|--agent) opts+=("$w" "${{COMP_WORDS[i+1]}}"); ((i++)) ;;
            -*) ;;
            *) [[ -z $cmd ]] && cmd=$w ;;
        esac
    done
    case $prev in
        {agent_opts})
            COMPREPLY=($(compgen -W "$(mailslot "${{opts[@]}}" completion --words agents \
2>/dev/null)" -- "$cur")); return ;;
        --dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    esac
    if [[ -z $cmd ]]; then
        COMPREPLY=($(compgen -W "{names}" -- "$cur")); return
    fi
    case $cmd in
        {ids})
            [[ $cur == -* ]] && return
            COMPREPLY=($(compgen -W "$(mailslot "${{opts[@]}}" completion --words ids \
2>/dev/null)" -- "$cur")) ;;
    esac
}}
complete -o default -F _mailslot mailslot
"""

_ZSH = """\
#compdef mailslot
# mailslot completion for zsh: save as _mailslot in a folder on $fpath,
# or eval "$(mailslot completion zsh)" after compinit in ~/.zshrc
_mailslot() {{
    local cmd="" i w
    local -a opts
    for ((i = 2; i < CURRENT; i++)); do
        w=${{words[i]}}
        case $w in
            --dir|--agent) opts+=($w ${{words[i+1]}}); ((i++)) ;;
            -*) ;;
            *) [[ -z $cmd ]] && cmd=$w ;;
        esac
    done
    case ${{words[CURRENT-1]}} in
        {agent_opts})
            compadd -- ${{(f)"$(mailslot $opts completion --words agents 2>/dev/null)"}}
            return ;;
        --dir) _files -/; return ;;
    esac
    if [[ -z $cmd ]]; then
        compadd -- {names}; return
    fi
    case $cmd in
        {ids}) compadd -- ${{(f)"$(mailslot $opts completion --words ids 2>/dev/null)"}} ;;
        *) _files ;;
    esac
}}
if [[ $funcstack[1] == _mailslot ]]; then _mailslot "$@"; else compdef _mailslot mailslot; fi
"""

_FISH = """\
# mailslot completion for fish: mailslot completion fish > ~/.config/fish/completions/mailslot.fish
function __mailslot_words
    set -l opts
    set -l line (commandline -opc)
    for i in (seq 2 (count $line))
        if contains -- $line[$i] --dir --agent; and test $i -lt (count $line)
            set opts $opts $line[$i] $line[(math $i + 1)]
        end
    end
    mailslot $opts completion --words $argv 2>/dev/null
end
complete -c mailslot -f
complete -c mailslot -n __fish_use_subcommand -a "{names}"
complete -c mailslot -l to -x -a "(__mailslot_words agents)"
complete -c mailslot -l for -x -a "(__mailslot_words agents)"
complete -c mailslot -l agent -x -a "(__mailslot_words agents)"
complete -c mailslot -l dir -x -a "(__fish_complete_directories)"
complete -c mailslot -n "__fish_seen_subcommand_from {ids}" -a "(__mailslot_words ids)"
"""
