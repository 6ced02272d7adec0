"""The smallest translation run of the command-line tests: ``npseq train`` options for a numbers model of 8
hidden units in one layer, which trains an epoch in a fraction of a second; the ``checkpoint`` fixture
(``conftest.py``) is that run saved after one epoch."""
SMALL_MODEL = ["--num-hiddens", "8", "--embed-size", "4", "--num-layers", "1", "--no-progress"]
TINY = ["--task", "numbers", "--num-examples", "120", *SMALL_MODEL]


def error_lines(err: str, command: str) -> list:
    """The lines of ``npseq COMMAND``'s stderr but its warnings, each one line of its own (``npseq COMMAND:
    warning: ...``; a tiny run warns that its test split holds words its training split lacks), and blank lines."""
    return [line for line in err.splitlines() if line.strip() and not line.startswith(f"npseq {command}: warning: ")]
