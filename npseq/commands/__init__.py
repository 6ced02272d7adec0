"""The subcommands of ``npseq`` that train, translate and check, one module each.

Every module has ``add_arguments(parser)`` and ``run(args) -> int``, as ``grade``, ``exercises``,
``data fetch`` (``data/datasets.py``) and ``tutorials`` do; its line in ``npseq --help`` is in
:data:`npseq.commands.runner.COMMANDS`. :mod:`npseq.cli` builds the one parser, importing only the
module of the command it runs, and :mod:`npseq.commands.runner` owns the exit codes. A
command parses and prints: the work is the library's (:mod:`npseq.runs`, :mod:`npseq.decode`,
:mod:`npseq.captions_demo`, :mod:`npseq.gradient_checks`).
"""
