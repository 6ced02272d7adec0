"""A learner's own correct work, for the tests: the sheet's solutions with one line of the learner's in each function.

The sheet's solutions are npseq's own, and the grader's copy check names them as such; a
test that needs a correct submission that is *not* a copy takes them through
:func:`own_work`, which adds one statement after every function's docstring (a learner
writes their own lines), so that the code no longer normalises to the sheet's.
"""
import re

OWN_LINE = "    written_by_hand = True  # a learner's own line: this is not the sheet's solution\n"


def own_work(source: str) -> str:
    """``source`` (solved functions, as ``npseq.course.handout.solutions`` writes them) with :data:`OWN_LINE` after
    each function's closing docstring line."""
    return re.sub(r'((?:^|\n)def [^\n]*\n    """(?:.*?)\n    """\n)', lambda m: m.group(1) + OWN_LINE, source,
                  flags=re.S)
