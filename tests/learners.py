"""A learner's own correct work, for the tests: solutions of the honesty corpus, written from the hand-outs alone.

``benchmarks/honesty/honest/<exercise>/<style>.py`` holds independent correct solutions
(``benchmarks/honesty/measure.py`` measures the copy check on them); a test that needs a
correct submission that is no copy of npseq's texts takes them through :func:`honest_work`.
"""
import pathlib
import re

HONEST = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "honesty" / "honest"


def honest_work(names, style: int = 0) -> str:
    """One file solving ``names``: for each, the ``style``-th (sorted) honest solution of the corpus, its own
    ``import numpy as np`` and first comment line left out, after one ``import numpy as np``."""
    parts = []
    for name in names:
        files = sorted((HONEST / name).glob("*.py"))
        text = files[style % len(files)].read_text()
        parts.append(re.sub(r"\A#[^\n]*\n", "", text).replace("import numpy as np\n", "", 1).strip())
    return "import numpy as np\n\n\n" + "\n\n\n".join(parts) + "\n"
