"""``browserd completion bash|zsh``: a shell completion script, written from the parser itself.

    eval "$(browserd completion bash)"      # or save it under /etc/bash_completion.d/browserd
"""

from __future__ import annotations

import argparse

SHELLS = ("bash", "zsh")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("completion", help="print a shell completion script (bash or zsh)")
    p.add_argument("shell", choices=SHELLS)
    p.set_defaults(handler=run)


def words(parser: argparse.ArgumentParser) -> dict[str, list[str]]:
    """Each command (and ``schedule``'s actions) with the options and actions it takes."""
    table: dict[str, list[str]] = {"": []}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                table[""].append(name)
                table[name] = [o for a in child._actions for o in a.option_strings]
                for sub in child._actions:
                    if isinstance(sub, argparse._SubParsersAction):
                        table[name] += list(sub.choices)
        else:
            table[""] += action.option_strings
    return table


def script(parser: argparse.ArgumentParser) -> str:
    cases = "\n".join(f"    {name}) opts=\"{' '.join(sorted(set(options)))}\" ;;"
                      for name, options in sorted(words(parser).items()) if name)
    top = " ".join(words(parser)[""])
    return f"""_browserd() {{
  local cur="${{COMP_WORDS[COMP_CWORD]}}" cmd="" opts="{top}" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "${{COMP_WORDS[i]}}" in -*) ;; *) cmd="${{COMP_WORDS[i]}}"; break ;; esac
  done
  case "$cmd" in
{cases}
  esac
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  [ ${{#COMPREPLY[@]}} -eq 0 ] && COMPREPLY=($(compgen -f -- "$cur"))
}}
complete -F _browserd browserd
"""


def run(args: argparse.Namespace) -> int:
    text = script(args.parser)
    if args.shell == "zsh":
        text = "autoload -U +X bashcompinit && bashcompinit\n" + text
    print(text, end="")
    return 0
