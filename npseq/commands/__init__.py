"""The subcommands of ``npseq`` that train, translate and check, one module each.

Every module has ``HELP`` (one line for ``npseq --help``), ``add_arguments(parser)`` and
``run(args) -> int``, as ``grade``, ``exercises``, ``data fetch`` (``data/datasets.py``) and
``tutorials`` do; :mod:`npseq.cli` builds the one parser from them and owns the exit codes. A
command parses and prints: the work is the library's (:mod:`npseq.runs`, :mod:`npseq.decode`,
:mod:`npseq.captions_demo`, :mod:`npseq.gradient_checks`).
"""
