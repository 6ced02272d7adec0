"""``npseq gradcheck``: every registered backward against finite differences; exit code 1 if one fails."""
from __future__ import annotations

from ..gradient_checks import REGISTRY, run_checks
from .arguments import UsageError, say, seed


def add_arguments(parser) -> None:
    """The options of ``npseq gradcheck``."""
    parser.add_argument("--only", nargs="+", metavar="NAME",
                        help="run only these registered checks; a name without its parenthesis (gru_step) runs all "
                             "its variants (--list shows the names)")
    parser.add_argument("--list", action="store_true", help="print the names of the registered checks and stop")
    parser.add_argument("--seed", type=seed, default=0)


def chosen_checks(names, registered) -> list:
    """The registered checks ``names`` asks for, in the registry's order: a name, or a name's first word for all
    its variants (``gru_step`` for ``gru_step (reset_after=False)`` and ``gru_step (reset_after=True)``).

    Raises:
        UsageError: a name that is no check (one line, pointing at ``--list``).
    """
    def asks_for(name, check):
        return check == name or check.startswith(name + " (")
    unknown = [name for name in names if not any(asks_for(name, check) for check in registered)]
    if unknown:
        raise UsageError(f"--only: no registered check is named {', '.join(map(repr, unknown))} "
                         f"(npseq gradcheck --list prints the {len(registered)} names)")
    return [check for check in registered if any(asks_for(name, check) for name in names)]


def run(args) -> int:
    if args.list:
        say("\n".join(REGISTRY))
        return 0
    names = chosen_checks(args.only, list(REGISTRY)) if args.only else list(REGISTRY)
    failed = []
    for name, report in run_checks(names, seed=args.seed):
        say(f"== {name}\n{report}\n")
        if not report.ok:
            failed.append(name)
    if failed:
        say(f"{len(failed)} of {len(names)} gradient checks FAILED: {', '.join(failed)}")
        return 1
    say(f"all {len(names)} gradient checks passed")
    return 0
