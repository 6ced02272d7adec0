"""The grader's runtime watch (npseq/course/watch.py): npseq's own backward, run while a function is graded, is seen
however the submission reached it (taken out of a wrapper, rebuilt from its source text, behind a record it cleared,
with the watch switched off), named in the report, and zeroed by ``--policy zero``; a learner's own work is not."""
import textwrap

import pytest

from npseq.course import grade_file

GRU = ["gru_step_backward"]
CALLED = "called while graded: npseq.functional.recurrent.gru_step_backward"
REBUILT = "npseq.functional.recurrent.gru_step_backward (rebuilt from its source)"

# npseq's function taken out of the watch's wrapper through the wrapper's closure (a watch that wraps hands it out)
UNWRAPPED = """\
    import npseq.functional as F


    def _original(fn):
        for cell in fn.__closure__ or ():
            if getattr(cell.cell_contents, "__name__", "") == fn.__name__:
                return cell.cell_contents
        return fn


    def gru_step_backward(dnext_h, cache):
        return _original(getattr(F, "gru_step_" + "backward"))(dnext_h, cache)
    """

# npseq's function called, then the watch's record of it cleared (the watch reached through a closure or gc)
CLEARED = """\
    import gc

    import npseq.functional as F


    def _watches():
        fn = getattr(F, "gru_step_" + "backward")
        found = [cell.cell_contents for cell in fn.__closure__ or () if hasattr(cell.cell_contents, "calls")]
        return found or [obj for obj in gc.get_objects() if type(obj).__name__.endswith("Watch")]


    def gru_step_backward(dnext_h, cache):
        grads = getattr(F, "gru_step_" + "backward")(dnext_h, cache)
        for watch in _watches():
            watch.calls.clear()
        return grads
    """

# npseq's function rebuilt from its file's text by an exec no reading of the file names
FROM_TEXT = """\
    import builtins

    import npseq.functional as F

    _run = vars(builtins)["ex" + "ec"]
    _text = open(F.recurrent.__file__).read()
    _start = _text.index("def gru_step_" + "backward(")
    _space = dict(vars(F.recurrent))
    _run(_text[_start:_text.index("\\ndef ", _start)], _space)
    gru_step_backward = _space["gru_step_" + "backward"]
    """

# npseq's function rebuilt from inspect.getsource's text (of its module: a wrapper's would be the wrapper's)
FROM_GETSOURCE = """\
    import inspect

    import npseq.functional.recurrent as R

    _text = inspect.getsource(R)
    _start = _text.index("def gru_step_backward(")
    _space = dict(vars(R))
    exec(_text[_start:_text.index("\\ndef ", _start)].replace("def gru_step_backward", "def mine"), _space)
    gru_step_backward = _space["mine"]
    """

# the watch switched off, then npseq's function called
SWITCHED_OFF = """\
    import sys

    import npseq.functional as F


    def gru_step_backward(dnext_h, cache):
        sys.setprofile(None)
        return getattr(F, "gru_step_" + "backward")(dnext_h, cache)
    """


def write(tmp_path, source, name="learner.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("source, says", [
    (UNWRAPPED, CALLED),
    (CLEARED, CALLED),
    (FROM_TEXT, REBUILT),
    (FROM_GETSOURCE, REBUILT),
    (SWITCHED_OFF, "reached around the grader's watch while graded: switched the watch off (sys.setprofile)"),
], ids=["closure", "cleared", "exec-from-text", "getsource-exec", "setprofile-off"])
def test_npseqs_backward_reached_around_the_watch_is_named_and_zeroed(tmp_path, source, says):
    path = write(tmp_path, source)
    noted = grade_file(path, only=GRU)
    assert noted["gru_step_backward"].points == 1 and noted.score == 100  # the default policy: graded as it is
    assert noted.flagged and says in str(noted), str(noted)
    zeroed = grade_file(path, only=GRU, policy="zero")
    gru = zeroed["gru_step_backward"]
    assert gru.points == 0 and gru.status == "honesty" and gru.correct == gru.total  # right, and zeroed
    assert says in str(zeroed) and "score 0 (policy zero)" in str(zeroed)


def test_the_records_name_what_was_seen(tmp_path):
    gru = grade_file(write(tmp_path, FROM_TEXT), only=GRU)["gru_step_backward"]
    assert gru.npseq_calls == (REBUILT,) and gru.evasions == ()
    off = grade_file(write(tmp_path, SWITCHED_OFF, "off.py"), only=GRU)["gru_step_backward"]
    assert off.evasions == ("switched the watch off (sys.setprofile)",)
    assert "reached around the grader's watch" in off.note and off.to_dict()["evasions"] == list(off.evasions)


def test_npseqs_backward_run_at_import_belongs_to_every_function(tmp_path):
    path = write(tmp_path, """\
        import numpy as np
        import npseq.functional as F

        _x, _h, _Wx, _Wh, _b = (np.ones(s) for s in ((1, 2), (1, 3), (2, 3), (3, 3), (3,)))
        getattr(F, "rnn_step_" + "backward")(np.ones((1, 3)), F.rnn_step_forward(_x, _h, _Wx, _Wh, _b)[1])


        def rnn_step_backward(dnext_h, cache):
            raise NotImplementedError
        """)
    rnn = grade_file(path, only=["rnn_step_backward"], policy="zero")["rnn_step_backward"]
    assert rnn.npseq_calls == ("npseq.functional.recurrent.rnn_step_backward",) and rnn.penalty


def test_a_thread_does_not_hide_npseqs_backward(tmp_path):
    path = write(tmp_path, """\
        import _thread
        import threading
        import time

        import npseq.functional as F


        def gru_step_backward(dnext_h, cache):
            found = []
            worker = threading.Thread(target=lambda: found.append(F.gru_step_backward(dnext_h, cache)))
            worker.start()
            worker.join()
            _thread.start_new_thread(lambda: None, ())
            time.sleep(0.01)
            return found[0]
        """)
    gru = grade_file(path, only=GRU, policy="zero")["gru_step_backward"]
    assert gru.npseq_calls == ("npseq.functional.recurrent.gru_step_backward",) and gru.points == 0
    assert gru.evasions == ("started a thread the watch does not follow (_thread.start_new_thread)",)


def test_an_honest_file_is_not_flagged(tmp_path):
    path = write(tmp_path, """\
        import numpy as np


        def rnn_step_backward(dnext_h, cache):
            x, prev_h, Wx, Wh, next_h = cache
            da = (1 - next_h * next_h) * dnext_h
            return da @ Wx.T, da @ Wh.T, x.T @ da, prev_h.T @ da, np.sum(da, axis=0)
        """)
    report = grade_file(path, only=["rnn_step_backward"], policy="zero")
    rnn = report["rnn_step_backward"]
    assert report.score == 100 and not report.flagged and "honesty" not in str(report)
    assert rnn.npseq_calls == () and rnn.evasions == () and not rnn.penalty


# the transformer hand-out's hint, word for word: the same bytecode as npseq's own masked_softmax_backward
HINT = ("def masked_softmax_backward(dweights, cache):\n"
        "    a = cache.weights\n"
        "    return a * (dweights - (dweights * a).sum(axis=-1, keepdims=True))\n")


def test_code_written_in_the_file_is_never_rebuilt_however_like_npseqs_it_is(tmp_path):
    """Text in the file is the copy check's to judge (a function written from the hints is npseq's bytecode); the
    same text built into code at run time, even under the file's own name, is new code and stays watched."""
    written = grade_file(write(tmp_path, HINT), only=["masked_softmax_backward"], policy="zero")
    softmax = written["masked_softmax_backward"]
    assert written.score == 100 and not written.flagged and softmax.npseq_calls == () and not softmax.penalty
    built = write(tmp_path, f"_text = {HINT!r}\n_space = {{}}\nexec(compile(_text, __file__, 'exec'), _space)\n"
                            "masked_softmax_backward = _space['masked_softmax_backward']\n", "built.py")
    rebuilt = grade_file(built, only=["masked_softmax_backward"], policy="zero")["masked_softmax_backward"]
    assert rebuilt.points == 0 and rebuilt.npseq_calls == (
        "npseq.functional.activations.masked_softmax_backward (rebuilt from its source)",)


READ_THE_WATCH = """\
    import sys

    import npseq.functional as F


    def gru_step_backward(dnext_h, cache):
        sys.getprofile().__defaults__  # what the watch keeps: reading it is seen
        return getattr(F, "gru_step_" + "backward")(dnext_h, cache)
    """

# the gradients handed back as objects that run npseq's backward only when the grader converts them to arrays
LAZY = """\
    import numpy as np

    import npseq.functional as F


    class Lazy:
        def __init__(self, dnext_h, cache, index):
            self.args, self.index = (dnext_h, cache), index

        def __array__(self, dtype=None, copy=None):
            return np.asarray(getattr(F, "gru_step_" + "backward")(*self.args)[self.index])


    def gru_step_backward(dnext_h, cache):
        return tuple(Lazy(dnext_h, cache, index) for index in range(6))
    """

# the channel to the grader swapped for another pipe while npseq's function runs, then put back
CHANNEL_SWAPPED = """\
    import os
    import stat

    import npseq.functional as F


    def _pipes():
        found = []
        for fd in range(3, 64):
            try:
                if stat.S_ISFIFO(os.fstat(fd).st_mode):
                    found.append(fd)
            except OSError:
                pass
        return found


    def gru_step_backward(dnext_h, cache):
        saved = {fd: os.dup(fd) for fd in _pipes()}
        _, elsewhere = os.pipe()
        for fd in saved:
            os.dup2(elsewhere, fd)
        try:
            return getattr(F, "gru_step_" + "backward")(dnext_h, cache)
        finally:
            for fd, copy in saved.items():
                os.dup2(copy, fd)
    """


@pytest.mark.parametrize("source, calls, evasions, failure", [
    (READ_THE_WATCH, ("npseq.functional.recurrent.gru_step_backward",), ("read the watch's own functions",), ""),
    (LAZY, ("npseq.functional.recurrent.gru_step_backward",), (), ""),
    (CHANNEL_SWAPPED, (), (), "crashed: the process running gru_step_backward replaced its channel to the grader"),
], ids=["read-the-watch", "lazy-arrays", "channel-swapped"])
def test_other_ways_around_the_watch_are_seen(tmp_path, source, calls, evasions, failure):
    gru = grade_file(write(tmp_path, source), only=GRU, policy="zero")["gru_step_backward"]
    assert gru.npseq_calls == calls and gru.evasions == evasions and gru.failure.startswith(failure)
    assert gru.points == 0
