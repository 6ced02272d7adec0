"""The exercise sets an instructor picks from (``npseq exercises --set NAME``), each a module of declared exercises.

- ``classic``: the recurrent cells and layers, Bahdanau attention, the embedding, the loss over time;
- ``variants``: cells whose backward no tutorial prints (their references live with the course,
  :mod:`npseq.course.references.variants`);
- ``attention``: Luong's general and concat scores, local-p attention with its predicted position,
  attention under a padding and a causal mask;
- ``transformer``: scaled dot-product attention, layer normalisation, multi-head attention, the
  feed-forward block, a residual-norm sub-layer;
- ``chain``: one training step of a small attention translator, its gradients graded link by link
  in the order the chain runs (:mod:`npseq.course.references.chain`);
- ``deep``: two RNN layers stacked and a bidirectional RNN layer over padded sequences, the grader naming the
  layer or the direction where a mistake enters (:mod:`npseq.course.references.deep`), and Nadaraya-Watson
  kernel regression with a learned width: the exercises of tutorials 11 and 12, which print npseq's backwards.

A new exercise is one declared function in its set's module (and its cases in the
:mod:`npseq.course.cases` module of the same name); a new set is one module here and one line in
:data:`SETS`.
"""
from . import attention, chain, classic, deep, transformer, variants

SETS = {"classic": classic.EXERCISES, "variants": variants.EXERCISES, "attention": attention.EXERCISES,
        "transformer": transformer.EXERCISES, "chain": chain.EXERCISES, "deep": deep.EXERCISES}
"""Each set's exercises (:class:`~npseq.course.exercise.Exercise` records), in the order of the sheet."""

SET_NAMES = tuple(SETS)

SET_SUMMARIES = {"classic": "the recurrent cells and layers, Bahdanau attention, the embedding, the loss",
                 "variants": "cells whose backward no tutorial prints (peephole and coupled LSTMs, ...)",
                 "attention": "Luong's scores, local-p attention, attention under padding and causal masks",
                 "transformer": "scaled dot-product and multi-head attention, layer norm, feed-forward, a sub-layer",
                 "chain": "one training step of a small attention translator, graded link by link",
                 "deep": "stacked and bidirectional RNN layers over padded sequences, Nadaraya-Watson pooling"}
"""One line per set, for ``--help`` and the instructor's table."""

DEFAULT_SETS = ("classic",)
"""The sets of a hand-out that names none."""
