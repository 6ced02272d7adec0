"""The summary of skips: one line per missing optional tool, with its count and install line; other skips as before."""
import re

import pytest
from optional_tools import TOOLS, count_missing_tools, missing_tool, skip_reason


def test_each_tool_has_one_reason_that_says_how_to_install_it():
    assert skip_reason("torch") == 'optional PyTorch (torch) missing: pip install -e ".[torch]"'
    assert skip_reason("notebooks").endswith('pip install -e ".[notebooks]"')
    assert len({skip_reason(tool) for tool in TOOLS}) == len(TOOLS)
    with pytest.raises(KeyError, match=r"tool: expected one of \['torch', .*\], got 'tensorflow'"):
        skip_reason("tensorflow")


def test_reasons_are_counted_per_tool_in_the_order_of_the_tools():
    reasons = [skip_reason("sacrebleu"), "Skipped: " + skip_reason("torch"), "nothing to mix on the host backend",
               skip_reason("torch"), skip_reason("cupy"), skip_reason("torch") + " (and more)"]
    assert count_missing_tools(reasons) == {skip_reason("torch"): 2, skip_reason("cupy"): 1,
                                            skip_reason("sacrebleu"): 1}
    assert missing_tool("Skipped: " + skip_reason("fra")) == "fra" and missing_tool("a GPU is visible here") is None


SESSION = '''
import pytest
from optional_tools import skip_reason

@pytest.mark.parametrize("case", range(5))
def test_against_torch(case):
    pytest.skip(skip_reason("torch"))

@pytest.mark.parametrize("case", range(3))
def test_on_the_gpu(case):
    pytest.skip(skip_reason("cupy"))

@pytest.mark.skipif(True, reason=skip_reason("torch"))
def test_marked():
    pass

def test_not_about_tools():
    pytest.skip("nothing to mix on the host backend")

def test_runs():
    assert True
'''


def _summary_lines(result) -> list:
    lines = result.outlines
    start = next(k for k, line in enumerate(lines) if "short test summary info" in line)
    return lines[start:]


def test_a_run_lists_one_line_per_missing_tool_and_other_skips_as_before(pytester):
    pytester.makeconftest("from optional_tools import pytest_terminal_summary  # noqa: F401\n")
    pytester.makepyfile(test_session=SESSION)
    result = pytester.runpytest("-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, skipped=10)  # the closing count keeps every skip
    summary = _summary_lines(result)
    skipped = [line for line in summary if line.startswith("SKIPPED")]
    assert re.fullmatch(r"SKIPPED \[1\] test_session\.py:\d+: nothing to mix on the host backend", skipped[0])
    assert skipped[1:] == [f"SKIPPED [6] {skip_reason('torch')}", f"SKIPPED [3] {skip_reason('cupy')}"]
    assert any("skipped for want of optional tools" in line for line in summary)


def test_without_skip_reports_nothing_is_added(pytester):
    pytester.makeconftest("from optional_tools import pytest_terminal_summary  # noqa: F401\n")
    pytester.makepyfile(test_session=SESSION)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, skipped=10)
    assert "skipped for want of optional tools" not in result.stdout.str()
    assert "SKIPPED [" not in result.stdout.str()


HOOKS = "from optional_tools import pytest_make_collect_report, pytest_runtest_makereport, pytest_terminal_summary\n"


def test_a_required_tool_that_is_missing_fails_instead_of_skipping(pytester, monkeypatch):
    """CI names the tools it installs; a test that would skip for want of one of them fails, with the reason."""
    monkeypatch.setenv("NPSEQ_REQUIRE_TOOLS", "torch, docs")
    pytester.makeconftest(HOOKS)
    pytester.makepyfile(test_session=SESSION, test_module_skip=(
        "from optional_tools import require\n"
        "require('a_module_that_is_not_installed', 'docs')\n"
        "def test_never_collected():\n    pass\n"))
    result = pytester.runpytest("-rs", "-p", "no:cacheprovider", "--continue-on-collection-errors")
    # The 5 torch skips in a test fail; the skipif mark (at setup) and the module (at import) are errors.
    result.assert_outcomes(passed=1, skipped=4, failed=5, errors=2)
    output = result.stdout.str()
    assert f"NPSEQ_REQUIRE_TOOLS names 'torch', but: {skip_reason('torch')}" in output
    assert f"NPSEQ_REQUIRE_TOOLS names 'docs', but: {skip_reason('docs')}" in output


def test_an_unknown_required_tool_is_an_error_not_a_silent_pass(pytester, monkeypatch):
    monkeypatch.setenv("NPSEQ_REQUIRE_TOOLS", "chromium,tensorflow")
    pytester.makeconftest(HOOKS)
    pytester.makepyfile(test_session=SESSION)
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret != 0
    assert "NPSEQ_REQUIRE_TOOLS: expected keys among" in result.stdout.str() + result.stderr.str()
