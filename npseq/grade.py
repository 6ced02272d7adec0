"""``python -m npseq.grade FILE``: the same as ``npseq grade FILE`` (hand-outs call :func:`main` from here)."""
import sys

from .commands.runner import run_alone


def main(argv=None) -> int:
    """``npseq grade`` on ``argv`` (default: the command line); returns the exit code."""
    return run_alone("grade", sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
