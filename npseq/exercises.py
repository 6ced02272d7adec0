"""``python -m npseq.exercises --out DIR``: the same as ``npseq exercises``; and where hand-outs written before
the course moved into :mod:`npseq.course` find the decoder step's forward (now in :mod:`npseq.functional`)."""
import sys

from .commands.runner import run_alone
from .functional.decoder_step import bahdanau_decoder_step_backward, bahdanau_decoder_step_forward  # noqa: F401


def main(argv=None) -> int:
    """``npseq exercises`` on ``argv`` (default: the command line); returns the exit code."""
    return run_alone("exercises", sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
