"""Everything a course uses, and nothing else: the exercises, the grader, the hand-outs.

* :mod:`~npseq.course.sets`: the exercise sets (classic, variants, attention, transformer, chain, deep),
  one declaration per exercise (its solved function and what grading needs), from which
  everything below follows; :mod:`~npseq.course.sheet` all of them in one table,
  :mod:`~npseq.course.exercise` the record, :mod:`~npseq.course.cases` the seeded cases,
  :mod:`~npseq.course.references` the maths of the exercises npseq's API does not hold.
* :mod:`~npseq.course.grader`: a submission against finite differences and npseq's own
  backward; :mod:`~npseq.course.submission` reads a ``.py`` or a notebook,
  :mod:`~npseq.course.sandbox` runs it in a child that sends back only arrays,
  :mod:`~npseq.course.honesty` notices npseq's own code handed in, :mod:`~npseq.course.report`
  says what was found.
* :mod:`~npseq.course.handout`: the skeleton, its README and notebook
  (:mod:`~npseq.course.notebook`), the solved copy, and the classic mistakes
  (:mod:`~npseq.course.mistakes`) with what the grader says of each.
* :mod:`~npseq.course.verdict`: a submission's scores under a :mod:`~npseq.course.scoring`, built once
  and shown by each platform: :mod:`~npseq.course.gradescope` and :mod:`~npseq.course.autograder`,
  Gradescope's bundle and results; :mod:`~npseq.course.prairielearn` and
  :mod:`~npseq.course.prairielearn_grader`, PrairieLearn's questions and results (both carrying npseq's
  wheels, :mod:`~npseq.course.wheels`); :mod:`~npseq.course.classroom`: a whole class graded, and what
  it got wrong.

The maths an exercise is graded against lives in :mod:`npseq.functional`, like all maths, except
where an exercise asks for what no tutorial prints (:mod:`~npseq.course.references`).
"""
from .grader import grade_file
from .handout import HandoutError, write_handout
from .report import FunctionGrade, GradeReport, TensorGrade
from .sheet import EXERCISES, NAMES
from .submission import SubmissionError
