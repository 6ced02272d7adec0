"""The bug zoo: the classic backprop mistakes, each planted in the sheet's own solution, with what the grader says.

Each :class:`Mistake` is one edit of one exercise's solution (``right`` replaced by
``wrong``, exactly once) and the diagnoses the grader gives the result
(:meth:`npseq.course.report.FunctionGrade.diagnoses`): the tensor, the gate or the first
wrong time step that points at it. The hand-out's README shows them, so that a learner
learns to read a failing check before meeting one, and ``tests/test_bug_zoo.py`` grades
every mistake and holds the grader to these words.
"""
from __future__ import annotations

import dataclasses

from .exercise import solution_source
from .sheet import EXERCISE_BY_NAME


@dataclasses.dataclass(frozen=True)
class Mistake:
    """One classic mistake, as an edit of a solution, and the grader's diagnoses of it."""
    title: str          # what the learner did
    exercise: str       # the exercise whose solution it is planted in
    right: str          # the solution's text ...
    wrong: str          # ... and the mistake in its place
    diagnoses: tuple    # what the grader says, in the order FunctionGrade.diagnoses gives it
    lesson: str         # how the diagnoses point at the mistake

    def planted_in(self, solved: str) -> str:
        """``solved`` (a solved copy that holds the exercise, as ``npseq.course.handout.solutions`` writes it) with
        the mistake in the exercise's function.

        Raises:
            ValueError: ``right`` does not occur exactly once in the exercise's solution, or ``solved`` lacks it.
        """
        source = solution_source(EXERCISE_BY_NAME[self.exercise].solution)
        if source.count(self.right) != 1 or solved.count(source) != 1:
            raise ValueError(f"right: expected once in {self.exercise}'s solution, and that solution once in "
                             f"solved; found {source.count(self.right)} and {solved.count(source)}")
        return solved.replace(source, source.replace(self.right, self.wrong))


MISTAKES = (
    Mistake("dprev_h computed with the untransposed weight", "rnn_step_backward",
            "da @ cache.Wh.T, cache.x.T", "da @ cache.Wh, cache.x.T",
            ("dprev_h: every element",),
            "Wh is square, so the shapes fit and only the values say it: one tensor wrong everywhere."),
    Mistake("db not summed over the batch", "rnn_step_backward", "da.sum(axis=0)", "da",
            ("db: wrong shape",),
            "the bias was broadcast over the N rows, so its gradient sums them: (N, H) where (H,) was due."),
    Mistake("the padding mask forgotten on the upstream gradient", "rnn_backward",
            "g = delta + m * dh[:, t]", "g = delta + dh[:, t]",
            ("dx: first wrong at t=2", "dh0: some elements", "dWx: every element", "dWh: every element",
             "db: every element"),
            "the outputs at padded steps are zeros, so their gradient must not flow: the first case's second "
            "row is padded from t=3, and dx goes wrong right below it."),
    Mistake("the gradient from step t+1 not carried back", "rnn_backward",
            "g = delta + m * dh[:, t]", "g = m * dh[:, t]",
            ("dx: first wrong at t=4", "dh0: some elements", "dWx: every element", "dWh: every element",
             "db: every element"),
            "the last step is right (nothing comes after it) and the one before is the first wrong one."),
    Mistake("two gates swapped", "lstm_step_backward",
            "[dc * g * i * (1 - i), dc * cache.prev_c * f * (1 - f),",
            "[dc * cache.prev_c * f * (1 - f), dc * g * i * (1 - i),",
            ("dx: every element", "dprev_h: every element", "dWx: gates i and f swapped", "dWh: gates i and f swapped",
             "db: gates i and f swapped"),
            "the weights' columns come in gate blocks [i, f, o, g]: the block you gave for gate i is the right one "
            "for gate f, and the other way round."),
    Mistake("sigma' written as sigma", "lstm_step_backward", "dc * g * i * (1 - i)", "dc * g * i",
            ("dx: every element", "dprev_h: every element", "dWx: gate i, every unit", "dWh: gate i, every unit",
             "db: gate i, every unit"),
            "only the input gate's block is wrong: the derivative of that one sigmoid."),
    Mistake("the weight gradients not summed over the steps", "rnn_backward",
            "dWx, dWh, db = dWx + dWx_t, dWh + dWh_t, db + db_t", "dWx, dWh, db = dWx_t, dWh_t, db_t",
            ("dWx: every element", "dWh: every element", "db: every element"),
            "every step uses the same weights, so their gradient is the sum over t: dx and dh0 stay right."),
    Mistake("the cell state's path back through time left out", "lstm_backward",
            "delta_c = dprev_h + (1 - m) * g, dprev_c + (1 - m) * delta_c",
            "delta_c = dprev_h + (1 - m) * g, (1 - m) * delta_c",
            ("dx: first wrong at t=4", "dh0: some elements",
             "dWx: gate i, every unit; gate f, every unit; gate o, every unit; gate g, every unit",
             "dWh: gate i, every unit; gate f, every unit; gate o, every unit; gate g, every unit",
             "db: gate i, every unit; gate f, every unit; gate o, every unit; gate g, every unit"),
            "dprev_c * f is how c_t reaches c_{t-1}: without it the step before the last is the first wrong one."),
    Mistake("a mean loss summed instead", "temporal_softmax_loss",
            "    loss = -(mask * picked).sum() / n\n", "    loss = -(mask * picked).sum()\n",
            ("loss: wrong value",),
            "the loss itself is checked against the forward: N times too big where N > 1, right where N = 1."),
    Mistake("a softmax backward without the row sum", "masked_softmax_backward",
            "a * (dweights - (dweights * a).sum(axis=-1, keepdims=True))", "a * dweights",
            ("dscores: some elements", "dscores: every element"),
            "every weight of a row depends on every score of it: the Jacobian's a_j a_k term is missing "
            "(masked keys stay 0, hence 'some' where a row is padded)."),
    Mistake("every layer fed the loss's gradient, not what the layer above hands down", "stacked_rnn_backward",
            "g = delta[l] + m * above", "g = delta[l] + m * dy[:, t]",
            ("dx: layer 1, first wrong at t=5", "dh0: layer 1", "dWx1: every element", "dWh1: every element",
             "db1: every element", "dx: layer 1, first wrong at t=0"),
            "layer 2's own gradients are right and layer 1's wrong from the last step on: layer 1's outputs reach "
            "the loss only through layer 2, so what reaches them from above is the input gradient of layer 2's "
            "step, not dy."),
    Mistake("the gradient from step t+1 not carried back in a layer", "stacked_rnn_backward",
            "g = delta[l] + m * above", "g = m * above",
            ("dx: layer 2, first wrong at t=4", "dh0: layer 1 and layer 2", "dWx1: every element",
             "dWh1: every element", "db1: every element", "dWx2: every element", "dWh2: every element",
             "db2: every element"),
            "layer 2 is named, not layer 1, which is fed by it; the last step is right (nothing comes after it) and "
            "the one before it is the first wrong one."),
    Mistake("the backward direction handed its gradient in the forward direction's time order",
            "bidirectional_rnn_backward",
            "rnn_backward(dy[rows, order, hidden:], cache.backward)", "rnn_backward(dy[:, :, hidden:], cache.backward)",
            ("dx: the backward direction, first wrong at t=0", "dh0: the backward direction", "dWx_b: every element",
             "dWh_b: every element", "db_b: every element"),
            "the forward direction is right; the backward one's cache is in its own reversed order, so its half of "
            "dy must be reversed the same way. Its backward walks up from t=0, and is wrong from there."),
    Mistake("each sequence reversed over all T steps, padding included", "bidirectional_rnn_backward",
            "order = np.where(t < lens[:, None], lens[:, None] - 1 - t, t)",
            "order = np.broadcast_to(steps - 1 - t, (n, steps))",
            ("dx: the backward direction, first wrong at t=0", "dh0: the backward direction", "dWx_b: every element",
             "dWh_b: every element", "db_b: every element"),
            "a sequence of valid length l is read backward from step l-1, not T-1: only the backward direction is "
            "wrong, and only in the rows cut short (the first case's second row, 2 of 5 steps valid)."),
    Mistake("the two halves of dy swapped between the directions", "bidirectional_rnn_backward",
            "(dy[:, :, :hidden], cache.forward)\n"
            "    dx_r, dh0_b, dWx_b, dWh_b, db_b = rnn_backward(dy[rows, order, hidden:]",
            "(dy[:, :, hidden:], cache.forward)\n"
            "    dx_r, dh0_b, dWx_b, dWh_b, db_b = rnn_backward(dy[rows, order, :hidden]",
            ("dx: the forward direction and the backward direction",
             "dh0: the forward direction and the backward direction", "dWx_f: every element", "dWh_f: every element",
             "db_f: every element", "dWx_b: every element", "dWh_b: every element", "db_b: every element"),
            "y puts the forward direction's H features first: swapped, both directions are wrong, each from the "
            "first step its backward visits, so no one step is first for dx."),
    Mistake("the key's gradient given the query's sign", "nadaraya_watson_backward",
            "dkeys = w ** 2 * (ds * d).sum(axis=1)", "dkeys = -w ** 2 * (ds * d).sum(axis=1)",
            ("dkeys: the opposite sign",),
            "a score depends on the query and the key through x - x_k, where the key has a minus: its gradient is "
            "the query's with the sign flipped (and summed over the queries rather than the keys)."),
    Mistake("the values' gradient not summed over the queries", "nadaraya_watson_backward",
            "dvalues = (a * dp[..., None]).sum(axis=1)", "dvalues = a * dp[..., None]",
            ("dvalues: wrong shape",),
            "every query of an example averages the same values, so a value's gradient sums over the queries: "
            "(N, Q, K) where (N, K) was due, even with one query per example."),
)
"""The catalogue, in the order of the sheet's exercises."""


def mistakes_of(exercises) -> list:
    """The mistakes planted in ``exercises`` (names or :class:`~npseq.course.exercise.Exercise` records)."""
    names = {getattr(exercise, "name", exercise) for exercise in exercises}
    return [mistake for mistake in MISTAKES if mistake.exercise in names]
