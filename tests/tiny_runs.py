"""The smallest translation run of the command-line tests: ``npseq train`` options for a numbers model of 8
hidden units in one layer, which trains an epoch in a fraction of a second; the ``checkpoint`` fixture
(``conftest.py``) is that run saved after one epoch."""
SMALL_MODEL = ["--num-hiddens", "8", "--embed-size", "4", "--num-layers", "1", "--no-progress"]
TINY = ["--task", "numbers", "--num-examples", "120", *SMALL_MODEL]
