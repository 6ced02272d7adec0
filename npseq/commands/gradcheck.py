"""``npseq gradcheck``: every registered backward against finite differences; exit code 1 if one fails."""
from __future__ import annotations

from .arguments import say, seed

HELP = "check every backward against finite differences"


def add_arguments(parser) -> None:
    """The options of ``npseq gradcheck``."""
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these registered checks")
    parser.add_argument("--seed", type=seed, default=0)


def run(args) -> int:
    from ..gradient_checks import REGISTRY, run_checks
    failed = []
    names = args.only or list(REGISTRY)
    for name, report in run_checks(names, seed=args.seed):
        say(f"== {name}\n{report}\n")
        if not report.ok:
            failed.append(name)
    if failed:
        say(f"{len(failed)} of {len(names)} gradient checks FAILED: {', '.join(failed)}")
        return 1
    say(f"all {len(names)} gradient checks passed")
    return 0
