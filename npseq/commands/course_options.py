"""The options of the commands that hand out and grade exercises: which numbers the cases use.

Apart from :mod:`npseq.commands.arguments` so that the commands that train and translate never import the course.
"""
from __future__ import annotations

from ..course.cases import student_seed
from ..course.secret import course_secret
from ..language import LANGUAGES
from .arguments import UsageError, seed


def seed_or_student(parser, what: str) -> None:
    """``--seed S`` or ``--student NAME`` (one of them): the variant of the cases' numbers, for ``what``."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--seed", type=seed, default=0,
                       help=f"{what}: the cases' numbers (0, the default: the sheet's own; another: the same shapes, "
                            "other numbers)")
    group.add_argument("--student", metavar="NAME",
                       help=f"{what}: the seed of this student's name or e-mail address and the course secret "
                            "(as the autograder derives it; see the README's per-student numbers)")


def language_option(parser, what: str) -> None:
    """``--lang {en,zh}``: the language ``what`` speaks; without it, the locale's (Chinese for a ``zh_CN`` locale,
    :func:`~npseq.language.language_of`)."""
    parser.add_argument("--lang", choices=LANGUAGES, default=None,
                        help=f"{what}: en (English) or zh (Chinese, 中文); default: the locale's (zh for a zh_CN "
                             "locale in LC_ALL, LC_MESSAGES or LANG, else en)")


def chosen_seed(args, make_secret: bool = False) -> int:
    """The seed ``--seed`` or ``--student`` gave; ``--student`` reads the course secret (makes it first with
    ``make_secret``: a hand-out's command may, a grading may not, see :mod:`npseq.course.secret`)."""
    if args.student is None:
        return args.seed
    if not args.student.strip():
        raise UsageError("--student: expected a name or an e-mail address, got an empty string")
    return student_seed(args.student, course_secret(create=make_secret))
