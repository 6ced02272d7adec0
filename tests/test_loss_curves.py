"""The attention and decoder code keeps its numbers: fixed-seed float64 loss curves against a saved reference.

``tests/data/loss_curves.json`` was written by ``python tests/loss_curve_runs.py`` before the attention
scores and the decoder were split into readable references and fast twins; every run of
:data:`loss_curve_runs.RUNS` must give the same 50 losses within 1e-10 (absolute; the losses are about 1 to 4).
"""
import json

import numpy as np
import pytest
from loss_curve_runs import NUM_STEPS, RUNS, SAVED, loss_curve


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(RUNS))
def test_the_loss_curve_is_the_saved_one(name):
    saved = json.loads(SAVED.read_text(encoding="utf-8"))[name]
    assert len(saved) == NUM_STEPS
    today = loss_curve(name)
    np.testing.assert_allclose(today, saved, rtol=0, atol=1e-10, err_msg=f"{name}: the loss curve moved")


def test_the_curves_are_not_flat():
    """A reference that did not train would pin nothing: every saved curve falls by a quarter at least."""
    for name, curve in json.loads(SAVED.read_text(encoding="utf-8")).items():
        assert curve[-1] < 0.75 * curve[0], name
