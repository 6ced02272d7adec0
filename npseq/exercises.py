r"""The course exercises: the Bahdanau decoder step they build up to, and the hand-out for instructors.

**The decoder step** (the reference of the last exercise): one step of the Bahdanau
decoder of :class:`npseq.models.Seq2SeqAttentionDecoder` with one GRU layer
(reset before), written with npseq's functional pairs. With :math:`h` the previous
state ``prev_h`` ``(N, H)``, :math:`e` the step's embedded input ``x`` ``(N, E)`` and
the encoder outputs :math:`k_s` ``enc_outputs`` ``(N, S, H_enc)``, masked by ``valid_lens``:

.. math::
    c &= \text{additive\_attention}(q = h,\ \text{keys} = \text{values} = k) && (N, H_{enc}) \\
    u &= [c;\ e] && (N, H_{enc} + E) \quad \text{(context first, as in d2l)} \\
    h' &= \text{gru\_step}(u, h) && (N, H)

:math:`h` reaches :math:`h'` along two paths, as the query and as the GRU's state,
and the encoder outputs along two more, as keys and as values; the backward adds
each pair.

**The hand-out**: ``npseq exercises --out DIR [--no-hints] [--only NAME ...]``
(:func:`write_handout`) writes the skeleton (the functions chosen, each raising
``NotImplementedError``), a README with each function's equations and the command
that grades it.
"""
from __future__ import annotations

import argparse
import ast
import os
import sys
from typing import Any, NamedTuple

from . import backend
from .functional import additive_attention_backward, additive_attention_forward, gru_step_backward, gru_step_forward


class BahdanauDecoderStepCache(NamedTuple):
    attention: Any  # the AdditiveAttentionCache of c (query prev_h, keys = values = enc_outputs)
    gru: Any        # the GRUStepCache of the GRU step on [c; x]
    context: Any    # (N, H_enc) c, the first H_enc features of the GRU's input


def bahdanau_decoder_step_forward(x, prev_h, enc_outputs, valid_lens, Wq, Wk, wv, Wx, Wh, bx, bh):
    r"""One step of a Bahdanau decoder: attend with the previous state, then a GRU step on ``[context; x]``.

    .. math::
        c = \sum_s \alpha_s k_s, \qquad
        \alpha = \operatorname{masked\_softmax}_s\big(w_v \cdot \tanh(h W_q + k_s W_k)\big), \qquad
        h' = \operatorname{GRU}([c;\ x],\ h)

    Args:
        x: ``(N, E)`` the embedded input token; prev_h: ``(N, H)``;
        enc_outputs: ``(N, S, H_enc)`` keys and values; valid_lens: ``None`` or ``(N,)`` in ``[0, S]``;
        Wq: ``(H, A)``; Wk: ``(H_enc, A)``; wv: ``(A,)``;
        Wx: ``(H_enc + E, 3H)``; Wh: ``(H, 3H)``; bx, bh: ``(3H,)`` (GRU, reset before, gates ``[r, z, n]``).

    Returns:
        ``next_h`` ``(N, H)`` and a :class:`BahdanauDecoderStepCache`.
    """
    xp = backend.get_array_module(x)
    context, _, attention = additive_attention_forward(prev_h[:, None, :], enc_outputs, enc_outputs, Wq, Wk, wv,
                                                       valid_lens)
    next_h, gru = gru_step_forward(xp.concatenate([context[:, 0], x], axis=1), prev_h, Wx, Wh, bx, bh)
    return next_h, BahdanauDecoderStepCache(attention, gru, context[:, 0])


def bahdanau_decoder_step_backward(dnext_h, cache: BahdanauDecoderStepCache):
    r"""Backward of :func:`bahdanau_decoder_step_forward`.

    .. math::
        du,\ dh^{gru},\ dW_x,\ dW_h,\ db_x,\ db_h &= \text{gru\_step\_backward}(dh') \\
        dc,\ dx &= du_{[:, :H_{enc}]},\ du_{[:, H_{enc}:]} \\
        dq,\ dk,\ dv,\ dW_q,\ dW_k,\ dw_v &= \text{additive\_attention\_backward}(dc) \\
        dh &= dh^{gru} + dq, \qquad d\,\text{enc\_outputs} = dk + dv

    Args:
        dnext_h: ``(N, H)``.

    Returns:
        ``dx`` ``(N, E)``, ``dprev_h`` ``(N, H)``, ``denc_outputs`` ``(N, S, H_enc)``, ``dWq``, ``dWk``,
        ``dwv``, ``dWx``, ``dWh``, ``dbx``, ``dbh`` (each shaped like its array).
    """
    du, dh_gru, dWx, dWh, dbx, dbh = gru_step_backward(dnext_h, cache.gru)
    enc_size = cache.context.shape[1]
    dcontext, dx = du[:, :enc_size], du[:, enc_size:]
    dquery, dkeys, dvalues, dWq, dWk, dwv = additive_attention_backward(dcontext[:, None, :], cache.attention)
    return dx, dh_gru + dquery[:, 0], dkeys + dvalues, dWq, dWk, dwv, dWx, dWh, dbx, dbh


# ------------------------------------------------------------------- hand-out
SKELETON_NAME = "backprop_exercises.py"

BUILDS_ON = {
    "additive_attention_backward": ("masked_softmax_backward",),
    "rnn_backward": ("rnn_step_backward",),
    "lstm_backward": ("lstm_step_backward",),
    "bahdanau_decoder_step_backward": ("gru_step_backward", "additive_attention_backward"),
    "multihead_attention_backward": ("masked_softmax_backward",),
}
"""The exercises whose solution calls another one (the learner's own): a hand-out that has one has the other."""


class HandoutError(Exception):
    """The hand-out cannot be written (no skeleton, an unknown name, a folder that cannot be made); one line."""


def skeleton_path() -> str:
    """The exercise sheet, ``tutorials/exercises/backprop_exercises.py`` of the repository npseq runs from."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tutorials", "exercises",
                        SKELETON_NAME)


def with_prerequisites(names) -> list:
    """``names`` and every exercise they build on (:data:`BUILDS_ON`), in the order of the sheet."""
    from .grade import NAMES
    chosen, pending = set(), list(names)
    while pending:
        name = pending.pop()
        if name not in chosen:
            chosen.add(name)
            pending.extend(BUILDS_ON.get(name, ()))
    return [name for name in NAMES if name in chosen]


def _without_hints(source: str) -> str:
    """Drop each docstring's ``Hints:`` section (from that line to the closing quotes)."""
    kept, skipping = [], False
    for line in source.splitlines(keepends=True):
        if line.strip() == "Hints:":
            skipping = True
        elif skipping and line.strip() == '"""':
            skipping = False
        if not skipping:
            kept.append(line)
    return "".join(kept)


def _sheet_parts(source: str) -> tuple:
    """Split the sheet: (module docstring, imports, {function name: its source with its header comment})."""
    lines = source.splitlines(keepends=True)
    tree = ast.parse(source)
    docstring_end = tree.body[0].end_lineno
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    first = functions[0].lineno - 1
    while first > 0 and lines[first - 1].startswith("#"):
        first -= 1
    imports = "".join(lines[docstring_end:first]).strip("\n") + "\n"
    bodies = {}
    for node in functions:
        start = node.lineno - 1
        while start > 0 and lines[start - 1].startswith("#"):
            start -= 1
        bodies[node.name] = "".join(lines[start:node.end_lineno])
    return "".join(lines[:docstring_end]), imports, bodies


def _sheet_docstring(docstring: str, names: list) -> str:
    """The sheet's docstring with its list of exercises cut down to ``names``."""
    kept = []
    for line in docstring.splitlines(keepends=True):
        words = line.split()
        is_entry = len(words) > 1 and words[0].rstrip(".").isdigit() and words[1].startswith("``")
        if not is_entry or words[1].strip("`") in names:
            kept.append(line)
    return "".join(kept)


def _grade_arguments(names: list) -> list:
    from .grade import NAMES
    return [] if list(names) == list(NAMES) else [word for name in names for word in ("--only", name)]


def write_handout(out: str, only=None, hints: bool = True) -> list:
    """Write the hand-out: the skeleton with the chosen exercises and a README with their equations.

    Args:
        out: the folder (made if missing); ``backprop_exercises.py`` and ``README.md`` in it are replaced.
        only: ``None`` for every exercise, or names from :data:`npseq.grade.NAMES`; the exercises
            they build on (:data:`BUILDS_ON`) come too.
        hints: keep each exercise's ``Hints:`` (the backward equations); ``False`` leaves the
            forward equations, the cache fields and the shapes only.

    Returns:
        The paths written.

    Raises:
        HandoutError: the sheet is missing, ``only`` names no exercise, or ``out`` cannot be written.
    """
    from .grade import NAMES
    unknown = [name for name in (only or ()) if name not in NAMES]
    if unknown:
        raise HandoutError(f"--only: expected names from {list(NAMES)}, got {unknown}")
    names = list(NAMES) if not only else with_prerequisites(only)
    path = skeleton_path()
    try:
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
    except OSError:
        raise HandoutError(f"the exercise sheet is not at {path}: the hand-out is written from npseq's repository "
                           f"(install npseq from it with pip install -e .)") from None
    docstring, imports, bodies = _sheet_parts(source)
    functions = [bodies[name] for name in names]
    if not hints:
        functions = [_without_hints(body) for body in functions]
    arguments = ", ".join(repr(word) for word in _grade_arguments(names))
    main_block = ('if __name__ == "__main__":\n    import sys\n\n    from npseq.grade import main\n\n'
                  f"    sys.exit(main([__file__{', ' + arguments if arguments else ''}] + sys.argv[1:]))\n")
    skeleton = "\n\n".join([_sheet_docstring(docstring, names) + "\n" + imports.rstrip("\n")]
                           + [body.rstrip("\n") for body in functions]) + "\n\n\n" + main_block
    try:
        os.makedirs(out, exist_ok=True)
        written = [os.path.join(out, SKELETON_NAME), os.path.join(out, "README.md")]
        with open(written[0], "w", encoding="utf-8") as handle:
            handle.write(skeleton)
        with open(written[1], "w", encoding="utf-8") as handle:
            handle.write(_readme(names, functions, hints))
    except OSError as exc:
        raise HandoutError(f"--out: cannot write to {out!r} ({exc.strerror})") from None
    return written


def _readme(names: list, functions: list, hints: bool) -> str:
    from .grade import DEFAULT_TIMEOUT, EXERCISE_BY_NAME
    command = " ".join(["npseq grade", SKELETON_NAME] + _grade_arguments(names))
    lines = ["# Backpropagation exercises", "",
             f"Write the backward passes in `{SKELETON_NAME}`: replace each `raise NotImplementedError` by your "
             "code, keeping the names, the signatures and the order of the returned gradients. The forward "
             "passes are npseq's own (the file imports them), so every cache has npseq's layout; each docstring "
             "lists the fields you may use" + (" and gives hints." if hints else "."),
             "", "You need npseq installed (`pip install -e .` in its repository).", "",
             "## Grading", "", "```", command, f"python {SKELETON_NAME}              # the same", "```", "",
             "The grader runs npseq's forward on fixed float64 inputs in a few cases (edge cases included: N=1, "
             "T=1, a row of all padding, repeated ids), calls your function on the cache and checks each "
             "gradient against finite differences and against npseq's own backward. A wrong tensor is "
             "located: its worst element, the gate and unit of a gate weight, the first wrong time step of a "
             "sequence gradient. Each function is worth one point, shared by its (case, tensor) pairs. "
             f"Each function runs in its own process with a time limit ({DEFAULT_TIMEOUT:g} s, `--timeout`). "
             "Exit code 0 when all is correct, 1 otherwise, 2 when the file cannot be loaded.", "",
             "Using npseq's own backward functions is reported to the instructor.", "",
             "For an autograder: `--format json` prints one JSON object; `--format gradescope --results "
             "/autograder/results/results.json` writes Gradescope's results.", "",
             "## The exercises", ""]
    for number, (name, body) in enumerate(zip(names, functions), start=1):
        docstring = ast.get_docstring(ast.parse(body).body[0])
        lines += [f"### {number}. `{EXERCISE_BY_NAME[name].signature}`", "", "```text", docstring, "```", ""]
    return "\n".join(lines)


HELP = "write a hand-out of the backward exercises"
DESCRIPTION = ("Write a hand-out of the backpropagation exercises: the skeleton file, a README with each "
               "exercise's equations, and the command that grades it.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``npseq exercises``, added to its subcommand parser (the ``npseq`` command builds it)."""
    from .grade import NAMES
    parser.add_argument("--out", required=True, metavar="DIR", help="the folder to write (made if missing)")
    parser.add_argument("--no-hints", action="store_true",
                        help="leave out the hints (the backward equations): forward equations and shapes only")
    parser.add_argument("--only", nargs="+", choices=NAMES, metavar="NAME",
                        help="these exercises (and those they build on); default: all")


def main(argv=None) -> int:
    """``npseq exercises --out DIR [--no-hints] [--only NAME ...]``: the ``npseq exercises`` command, for
    ``python -m npseq.exercises``; returns the exit code."""
    from .cli import main as npseq_main
    return npseq_main(["exercises", *(sys.argv[1:] if argv is None else argv)])


def run(args) -> int:
    """Write the hand-out as ``npseq exercises`` parsed it; return the exit code."""
    from .grade import NAMES
    try:
        written = write_handout(args.out, args.only, hints=not args.no_hints)
    except HandoutError as exc:
        print(f"npseq exercises: {exc}", file=sys.stderr, flush=True)
        return 2
    names = args.only and with_prerequisites(args.only) or list(NAMES)
    print(f"wrote {', '.join(written)} ({len(names)} exercises{', no hints' if args.no_hints else ''})")
    print(f"grade with: cd {args.out} && " + " ".join(["npseq grade", SKELETON_NAME] + _grade_arguments(names)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
