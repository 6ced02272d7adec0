"""``npseq data fetch NAME``: download a dataset, check its SHA-1, unpack it into the cache (or register a copy).

The work is :func:`npseq.data.datasets.fetch_dataset`'s; this module parses and prints.
"""
from __future__ import annotations

import sys
import zipfile

from ..data.datasets import DATASETS, DEADLINE_S, MAX_DEADLINE_S, cached_file, fetch_dataset, tidy_cache
from .arguments import existing_file, non_empty, positive, show_progress

DESCRIPTION = ("Download a dataset npseq knows by name into the cache ($NPSEQ_DATA, default ~/.cache/npseq), "
               "check its SHA-1 as d2l's DATA_HUB does and unpack it; or register a copy you already have "
               "(--from FILE). Then `npseq train --data NAME` finds it. Datasets: "
               + "; ".join(f"{entry.name}: {entry.about}" for entry in DATASETS.values()) + ".")


def add_arguments(parser) -> None:
    """The options of ``npseq data fetch``."""
    parser.add_argument("name", choices=sorted(DATASETS), help="the dataset")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--url", type=non_empty("a URL"),
                       help="download from this URL instead of d2l's server (a mirror); the SHA-1 is still checked")
    where.add_argument("--from", dest="source", metavar="FILE", type=existing_file,
                       help="register a copy you have instead of downloading: the zip (its SHA-1 is checked) or "
                            "the text file itself (fra.txt; nothing to check it against)")
    parser.add_argument("--force", action="store_true", help="download again when the cache has the dataset")
    parser.add_argument("--deadline", type=positive(float, MAX_DEADLINE_S), default=DEADLINE_S, metavar="SECONDS",
                        help=f"give the download up after this many seconds in all, however slowly the server sends "
                             f"(default {DEADLINE_S:g})")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args) -> int:
    """Fetch or register ``args.name`` as ``npseq data fetch`` parsed it; report where it is; return 0."""
    entry = DATASETS[args.name]
    tidy_cache(args.name)  # what a killed fetch left behind, before the cache is looked at
    if args.source is None and not args.force and cached_file(args.name).is_file():
        print(f"{args.name} is already in the cache: {cached_file(args.name)} (--force downloads it again)",
              flush=True)
        return 0
    if args.source is None:
        print(f"downloading {args.url or entry.url}", flush=True)
    path = fetch_dataset(args.name, url=args.url, source=args.source, progress=show_progress(args),
                         force=args.force, deadline=args.deadline)
    if args.source is not None and not zipfile.is_zipfile(args.source):
        print(f"note: {args.source} is the text file itself; there is no published SHA-1 of it, so it was "
              f"registered unchecked", file=sys.stderr, flush=True)
    print(f"{args.name}: {path}\ntrain on it with `npseq train --data {args.name}`", flush=True)
    return 0
