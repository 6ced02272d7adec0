"""Shared test settings: hypothesis without deadlines (CI machines are shared and noisy), one summary line
per missing optional tool (:mod:`optional_tools`) instead of one per skipped test location, and the long runs
marked slow (:func:`pytest_collection_modifyitems`).

NPSEQ_HYPOTHESIS_PROFILE=stress runs many more examples, to hunt for flaky tolerances.
"""
import os

import pytest
from hypothesis import HealthCheck, settings
from optional_tools import (  # noqa: F401  (hooks: pytest finds them here)
    pytest_make_collect_report,
    pytest_runtest_makereport,
    pytest_terminal_summary,
)
from tiny_runs import TINY

from npseq.cli import main

pytest_plugins = ["pytester"]  # test_optional_tools runs small pytest sessions to check that summary

_relaxed = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("default", max_examples=40, **_relaxed)
settings.register_profile("ci", max_examples=25, **_relaxed)
settings.register_profile("stress", max_examples=1000, **_relaxed)
settings.load_profile(os.environ.get("NPSEQ_HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "default"))


LONG_RUNS = ("fuzz_long", "demo_full", "tutorial_full")
"""The markers of the runs that go only on request; each is slow too, so that -m "not slow" never selects them."""


@pytest.hookimpl(tryfirst=True)  # before -m deselects: the marks it reads are the ones added here
def pytest_collection_modifyitems(items):
    for item in items:
        if any(item.get_closest_marker(name) for name in LONG_RUNS):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def course_secret_of_the_test(tmp_path_factory, monkeypatch):
    """Every test's course secret lies in a folder of the session's own (``NPSEQ_COURSE_SECRET``), never in the
    user's ``~/.config``: made there by the first hand-out for a student, as ``npseq exercises`` makes it."""
    monkeypatch.setenv("NPSEQ_COURSE_SECRET", str(tmp_path_factory.getbasetemp() / "course-secret"))


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An empty dataset cache of the test's own (``NPSEQ_DATA``), and no ``NPSEQ_FRA`` from the environment."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("NPSEQ_DATA", str(folder))
    monkeypatch.delenv("NPSEQ_FRA", raising=False)
    return folder


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A small numbers checkpoint written by ``npseq train`` (:data:`tiny_runs.TINY`) after one epoch, one for each
    test module that asks."""
    path = tmp_path_factory.mktemp("tiny") / "ck.npz"
    assert main([*map(str, ["train", *TINY, "--epochs", "1", "--save", path])]) == 0
    return path
