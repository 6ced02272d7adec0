"""Write the disguised copies of the honesty corpus: each exercise's copyable texts, edited as a copier edits them.

    python benchmarks/honesty/make_copies.py        # (re)writes benchmarks/honesty/copies/

For every exercise of every set, three texts a learner could copy: npseq's reference backward
(``exercise.engine``, its source with its checks, as ``npseq/`` holds it), the same as a
tutorial prints it and a learner pastes it (the argument checks and the array-module line
deleted, ``np.`` for ``xp.``: what runs in a hand-out), and the key's solution
(``exercise.solution``, what ``npseq exercises --solutions`` writes). Each is edited by one
disguise of :data:`EDITS` alone (taken in turn, so that each is used about as often) and by all
of them together, with a seed of its own, and written as ``copies/<exercise>/<text>__<edit>.py``
under a first line saying what it is.

The copies are committed (the corpus is what ``benchmarks/honesty/measure.py`` reads); this
script says how they were made and makes them again when npseq's texts change.
"""
import ast
import builtins
import inspect
import os
import random
import re
import shutil
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from npseq._checks import is_check_statement  # noqa: E402
from npseq.course.sheet import EXERCISES  # noqa: E402

OUT = os.path.join(HERE, "copies")
KEEP = set(dir(builtins)) | {"np", "xp", "cache", "self", "backend", "math"}
"""Names a rename leaves alone: what the copier cannot rename without breaking the code."""


def function_node(source: str) -> ast.FunctionDef:
    return next(node for node in ast.parse(source).body if isinstance(node, ast.FunctionDef))


def source_of(function) -> str:
    """``function``'s ``def`` to its last line, dedented, without decorators."""
    text = textwrap.dedent(inspect.getsource(function))
    node = function_node(text)
    return "".join(text.splitlines(keepends=True)[node.lineno - 1:node.end_lineno])


def without_docstring(node: ast.FunctionDef) -> ast.FunctionDef:
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        node.body = body[1:] or [ast.Pass()]
    return node


def pasted(source: str) -> str:
    """What a tutorial prints, as a learner makes it run in a hand-out: the checks and the ``xp`` line deleted."""
    node = without_docstring(function_node(source))
    node.body = [s for s in node.body if not is_check_statement(s)] or [ast.Pass()]
    return re.sub(r"\bxp\.", "np.", ast.unparse(node))


# ------------------------------------------------------------------ the disguises
def rename(node: ast.FunctionDef, rng: random.Random) -> ast.FunctionDef:
    """Every local name and argument gets another name."""
    mapping = {}

    def new(name):
        if name in KEEP:
            return name
        return mapping.setdefault(name, f"{rng.choice(['g', 't', 'grad', 'tmp', 'val', 'q'])}_{len(mapping)}")

    class Renamer(ast.NodeTransformer):
        def visit_Name(self, n):
            return ast.copy_location(ast.Name(new(n.id), n.ctx), n)

        def visit_arg(self, n):
            n.arg = new(n.arg)
            return n
    name = node.name
    node = Renamer().visit(node)
    node.name = name
    return node


def _effects(statement):
    loads = {n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    stores = {n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    return loads, stores


def reorder(node: ast.FunctionDef, rng: random.Random) -> ast.FunctionDef:
    """Swap independent neighbouring assignments, a few times."""
    body = node.body
    for _ in range(6):
        swappable = [i for i in range(len(body) - 1)
                     if all(isinstance(s, ast.Assign) for s in body[i:i + 2])
                     and not (_effects(body[i])[1] & (_effects(body[i + 1])[0] | _effects(body[i + 1])[1]))
                     and not (_effects(body[i + 1])[1] & _effects(body[i])[0])]
        if not swappable:
            break
        i = rng.choice(swappable)
        body[i], body[i + 1] = body[i + 1], body[i]
    return node


NOOPS = ["pass", "_unused = None", "assert True", "checked = 0", "del_me = []"]


def noop(node: ast.FunctionDef, rng: random.Random) -> ast.FunctionDef:
    """A statement that changes nothing after every other statement or so."""
    body = []
    for statement in node.body:
        body.append(statement)
        if rng.random() < 0.5 and not isinstance(statement, ast.Return):
            body.append(ast.parse(rng.choice(NOOPS)).body[0])
    node.body = body
    return node


def delete(node: ast.FunctionDef, rng: random.Random) -> ast.FunctionDef:
    """The checks deleted, and one more line (a copier trims what they do not understand)."""
    body = [s for s in node.body if not is_check_statement(s)]
    candidates = [i for i, s in enumerate(body[:-1]) if isinstance(s, ast.Assign)]
    if len(candidates) > 2:
        del body[rng.choice(candidates)]
    node.body = body or [ast.Pass()]
    return node


def extract(node: ast.FunctionDef, rng: random.Random) -> tuple:
    """One assignment's right-hand side moved into a helper function; returns the node and the helper."""
    candidates = [s for s in node.body if isinstance(s, ast.Assign) and len(ast.unparse(s.value)) > 20]
    if not candidates:
        return node, None
    chosen = rng.choice(candidates)
    names = sorted({n.id for n in ast.walk(chosen.value) if isinstance(n, ast.Name) and n.id not in KEEP})
    helper = ast.parse(f"def _part({', '.join(names)}):\n    return {ast.unparse(chosen.value)}\n").body[0]
    chosen.value = ast.parse(f"_part({', '.join(names)})", mode="eval").body
    return node, helper


def decorate(node: ast.FunctionDef, rng: random.Random) -> tuple:
    node.decorator_list = [ast.Name("_keep", ast.Load())]
    return node, ast.parse("def _keep(function):\n    return function\n").body[0]


def alias(node: ast.FunctionDef, rng: random.Random) -> ast.FunctionDef:
    """Every ``cache.field`` read once into a local name of its own."""
    fields = sorted({n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                     and n.value.id == "cache"})

    class Unalias(ast.NodeTransformer):
        def visit_Attribute(self, n):
            self.generic_visit(n)
            if isinstance(n.value, ast.Name) and n.value.id == "cache":
                return ast.copy_location(ast.Name(f"c_{n.attr}", ast.Load()), n)
            return n
    node = Unalias().visit(node)
    node.body = [ast.parse(f"c_{field} = cache.{field}").body[0] for field in fields] + node.body
    return node


def relayout(text: str, rng: random.Random) -> str:
    """Comments and blank lines in other places (the code itself re-laid out by ast.unparse)."""
    lines = []
    for line in text.splitlines():
        if line.startswith("    ") and rng.random() < 0.3:
            lines.append(line[:len(line) - len(line.lstrip())] + "# " + rng.choice(["step", "gradient", "see notes",
                                                                                    "chain rule"]))
        lines.append(line)
        if rng.random() < 0.2:
            lines.append("")
    return "\n".join(lines) + "\n"


EDITS = ("rename", "reorder", "noop", "delete", "extract", "decorate", "alias", "layout")


def disguised(source: str, edits: tuple, seed: int) -> str:
    rng = random.Random(seed)
    node = without_docstring(function_node(source))
    helpers = []
    for edit in edits:
        if edit in ("extract", "decorate"):
            node, helper = {"extract": extract, "decorate": decorate}[edit](node, rng)
            helpers += [helper] if helper is not None else []
        elif edit != "layout":
            node = {"rename": rename, "reorder": reorder, "noop": noop, "delete": delete, "alias": alias}[edit](node,
                                                                                                               rng)
    text = "\n\n\n".join(ast.unparse(ast.fix_missing_locations(part)) for part in [node] + helpers)
    return relayout(text, rng) if "layout" in edits else text + "\n"


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    written = 0
    for number, exercise in enumerate(EXERCISES):
        texts = {"npseq": source_of(exercise.engine), "tutorial": pasted(source_of(exercise.engine)),
                 "key": source_of(exercise.solution)}
        os.makedirs(os.path.join(OUT, exercise.name))
        for text_number, (kind, text) in enumerate(texts.items()):
            alone = EDITS[(3 * number + text_number) % len(EDITS)]  # each edit alone about as often as the others
            for edits in [(alone,), EDITS]:
                name = "all" if len(edits) > 1 else edits[0]
                seed = 1000 * number + 100 * text_number + len(edits)
                body = disguised(text, edits, seed)
                if exercise.engine.__name__ != exercise.name:  # the reference has another name: the copy has the
                    body = re.sub(rf"\bdef {exercise.engine.__name__}\(", f"def {exercise.name}(", body)  # hand-out's
                label = {"npseq": f"{exercise.engine.__module__}.{exercise.engine.__name__}",
                         "tutorial": f"{exercise.engine.__module__}.{exercise.engine.__name__}, pasted from a "
                                     "tutorial", "key": "the solutions key"}[kind]
                with open(os.path.join(OUT, exercise.name, f"{kind}__{name}.py"), "w") as handle:
                    handle.write(f"# copy of {label}; disguised by: {', '.join(edits)}\n"
                                 f"import numpy as np\n\n\n{body}")
                written += 1
    print(f"wrote {written} copies into {os.path.relpath(OUT)}")


if __name__ == "__main__":
    main()
