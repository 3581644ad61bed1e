"""``browserd recipe``: save a succeeded agent job as a recipe; list, show and delete recipes.

A job replays one with ``{"recipe": NAME, "params": {...}}`` (``browserd submit --recipe``).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from daemon.cli.commands.submit import params_of
from daemon.cli.output import api_command, client, print_json
from workers.jobs.recipes.models import RecipeInfo


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("recipe", help="recipes: save a job as one, list, show, delete")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    save = actions.add_parser("save", help="save a succeeded agent job as a recipe (a new version if NAME exists)")
    save.add_argument("job_id")
    save.add_argument("--name", required=True)
    save.add_argument("--param", action="append", default=None, metavar="NAME=VALUE",
                      help="a parameter and the value the job used (repeat); default: the task's quoted strings "
                      "the job typed")
    listing = actions.add_parser("list", help="every recipe with its version and success rate")
    listing.add_argument("--tenant", help="the admin's: one tenant's recipes (default: everyone's)")
    show = actions.add_parser("show", help="one recipe: its steps, parameters and statistics")
    show.add_argument("name")
    show.add_argument("--version", type=int)
    delete = actions.add_parser("delete", help="forget a recipe and all its versions")
    delete.add_argument("name")
    p.add_argument("--json", action="store_true", help="print JSON")
    for one in (save, listing, show, delete):
        one.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
    p.set_defaults(handler=run)


def line(info: RecipeInfo) -> str:
    r, s = info.recipe, info.stats
    rate = f"{s.success_rate:.0%}" if s.success_rate is not None else "-"
    state = f"  BROKEN: {s.broken}" if s.broken else ""
    state += f"  tenant {info.tenant}" if info.tenant else ""
    params = ",".join(r.params) or "-"
    return (f"{r.name}  v{r.version}  steps={len(r.steps)}  params={params}  runs={s.runs}  replayed={s.replayed}  "
            f"healed={s.healed}  failed={s.failed}  success={rate}{state}")


def details(info: RecipeInfo) -> str:
    lines = [line(info), f"task: {info.recipe.task}", f"start: {info.recipe.start_url or '-'}",
                  f"versions: {', '.join(map(str, info.versions))}"]
    lines += [f"  {n}. {step.action} {json.dumps(step.params, ensure_ascii=False, default=str)}"
              for n, step in enumerate(info.recipe.steps, 1)]
    return "\n".join(lines)


@api_command
def run(args: argparse.Namespace) -> int:
    api = client()
    answer: Any
    if args.action == "save":
        answer = api.save_recipe(args.job_id, args.name, params_of(args.param))
    elif args.action == "list":
        answer = api.recipes(tenant=args.tenant)
    elif args.action == "show":
        answer = api.recipe(args.name, args.version)
    else:
        api.delete_recipe(args.name)
        print(f"deleted {args.name}")
        return 0
    if args.json:
        print_json([a.model_dump(mode="json") for a in answer] if isinstance(answer, list) else answer.model_dump(mode="json"))
    elif isinstance(answer, list):
        for info in answer:
            print(line(info))
    else:
        print(details(answer) if args.action == "show" else line(answer))
    return 0
