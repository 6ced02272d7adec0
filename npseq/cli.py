"""The ``npseq`` command."""
from __future__ import annotations

import argparse
import sys

from . import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="npseq",
        description="Sequence models written by hand in NumPy: RNN, GRU, LSTM, attention, seq2seq.",
    )
    parser.add_argument("--version", action="version", version=f"npseq {__version__}")
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    parser.parse_args(argv)
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
