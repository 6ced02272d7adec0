"""The optional tools some tests need: one skip reason each, and a run's summary of them, one line per tool.

npseq requires NumPy, matplotlib and tqdm only. Some tests compare with, or run on,
something more (:data:`TOOLS`): PyTorch, CuPy with a GPU, sacrebleu, num2words, the
notebooks extra, a C++ compiler, the fra-eng corpus, setpriv (to meet file permissions
as root). Such a test skips with :func:`skip_reason` of its tool (:func:`require`
imports a module or skips so), which says what is missing and how to install it, so
that every skip for one tool reads the same wherever it happens.

At the end of a run that reports skips (``-rs``; setup.cfg's ``-ra`` includes it),
pytest would list a line per test location, dozens of them repeating one hint. The
hook :func:`pytest_terminal_summary` (the conftest imports it) takes the skips for
missing tools out of pytest's list and prints them as one line per tool, with the
number of tests it skipped (:func:`count_missing_tools`); every other skip is listed
by pytest as before, and the closing count still includes all of them.
"""
from __future__ import annotations

import os
from typing import NamedTuple

import pytest

from npseq.data.datasets import find_dataset, how_to_get

FRA_TXT = find_dataset("fra-eng")
"""The fra-eng corpus (Tatoeba/Anki ``fra.txt``): ``$NPSEQ_FRA``, else npseq's cache; ``None`` when neither has it."""


class Tool(NamedTuple):
    """Something some tests need and npseq does not require."""
    name: str     # what is missing, as the summary says it
    install: str  # how to get it: the extra that installs it, where there is one


TOOLS = {
    "torch": Tool("PyTorch (torch)", 'pip install -e ".[torch]"'),
    "cupy": Tool("CuPy or a GPU", 'pip install -e ".[cuda12]" or ".[cuda13]" (your CUDA version), '
                                  "on a machine with an NVIDIA GPU"),
    "sacrebleu": Tool("sacrebleu", 'pip install -e ".[crosscheck]"'),
    "num2words": Tool("num2words", 'pip install -e ".[crosscheck]"'),
    "notebooks": Tool("the notebooks extra (jupytext, nbclient, ipykernel)", 'pip install -e ".[notebooks]"'),
    "c++": Tool("a C++ compiler (g++ or c++)", "install one with the system's packages (e.g. apt-get install g++)"),
    "fra": Tool("the fra-eng corpus", how_to_get("fra-eng")),
    "docs": Tool("the docs extra (sphinx, myst-nb, furo, sphinx-mathjax-offline, selenium)",
                 'pip install -e ".[docs]"'),
    "chromium": Tool("Chromium and its driver (chromium, chromedriver)",
                     "install them with the system's packages (apt-get install chromium chromium-driver)"),
    "cjk-font": Tool("a font with Chinese characters (the Chinese book's pages need one)",
                     "install one with the system's packages (apt-get install fonts-noto-cjk)"),
    "setpriv": Tool("util-linux's setpriv (root ignores file permissions without it)",
                    "install it with the system's packages (apt-get install util-linux)"),
}
"""The optional tools, by the key :func:`skip_reason` and :func:`require` take."""

SKIPPED_PREFIX = "Skipped: "  # how pytest starts some skip reasons; its own summary drops it too


def skip_reason(tool: str) -> str:
    """The one skip reason of every test that needs ``tool`` (a key of :data:`TOOLS`)."""
    if tool not in TOOLS:
        raise KeyError(f"tool: expected one of {list(TOOLS)}, got {tool!r}")
    return f"optional {TOOLS[tool].name} missing: {TOOLS[tool].install}"


def require(module: str, tool: str | None = None):
    """``import module``, or skip the test with :func:`skip_reason` of ``tool`` (default: the module's name)."""
    return pytest.importorskip(module, reason=skip_reason(tool or module))


_REASONS = {skip_reason(tool): tool for tool in TOOLS}


def missing_tool(reason: str) -> str | None:
    """The key of the tool whose missing made a test skip with ``reason``; ``None`` for any other skip."""
    return _REASONS.get(reason.removeprefix(SKIPPED_PREFIX))


def count_missing_tools(reasons) -> dict:
    """``{skip reason: number of tests}`` for the reasons that name a missing tool, in the order of
    :data:`TOOLS`; other reasons are left out."""
    counts = {}
    for reason in reasons:
        tool = missing_tool(reason)
        if tool is not None:
            counts[tool] = counts.get(tool, 0) + 1
    return {skip_reason(tool): counts[tool] for tool in TOOLS if tool in counts}


def _reason(report) -> str:
    """The reason of a skip report (its ``longrepr`` is ``(path, line, reason)``)."""
    longrepr = report.longrepr
    return longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else ""


REQUIRED = "NPSEQ_REQUIRE_TOOLS"
"""The environment variable that lists tools (keys of :data:`TOOLS`, comma-separated) a run must have:
a test that would skip for want of one of them fails instead. CI sets it for the tools it installs, so
that a failed install cannot pass as a green run of skips."""


def required_tools() -> set:
    """The keys :data:`REQUIRED` names; an unknown key is an error, so that a typo cannot turn the check off."""
    keys = {key.strip() for key in os.environ.get(REQUIRED, "").split(",") if key.strip()}
    unknown = sorted(keys - set(TOOLS))
    if unknown:
        raise KeyError(f"{REQUIRED}: expected keys among {list(TOOLS)}, got {unknown}")
    return keys


def _fail_if_required(report):
    """``report`` made a failure when it is a skip for want of a tool that :data:`REQUIRED` names."""
    if report.skipped:
        tool = missing_tool(_reason(report))
        if tool is not None and tool in required_tools():
            report.outcome = "failed"
            report.longrepr = f"{REQUIRED} names {tool!r}, but: {_reason(report).removeprefix(SKIPPED_PREFIX)}"
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A test's skip for want of a required tool (:data:`REQUIRED`) becomes a failure that says so."""
    return _fail_if_required((yield))


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    """A module's skip at import (:func:`require` at its top) for want of a required tool becomes an error."""
    return _fail_if_required((yield))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter):
    """Around pytest's summary: its list of skips without those for missing tools, then one line per tool."""
    reporter = terminalreporter
    skipped = reporter.stats.get("skipped", [])
    grouped = reporter.hasopt("s") and any(missing_tool(_reason(report)) for report in skipped)
    if grouped:
        reporter.stats["skipped"] = [report for report in skipped if missing_tool(_reason(report)) is None]
    try:
        return (yield)
    finally:
        if grouped:
            reporter.stats["skipped"] = skipped  # the closing count includes every skip
            reporter.write_sep("=", "skipped for want of optional tools", yellow=True)
            for reason, count in count_missing_tools(_reason(report) for report in skipped).items():
                reporter.write_line(f"SKIPPED [{count}] {reason}")
