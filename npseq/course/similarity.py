"""How much of one function's code is found in another: winnowed k-grams over a normalised token stream.

This is the measure behind the honesty report (:mod:`npseq.course.copies`): MOSS's method
(Schleimer, Wilkerson and Aiken, *Winnowing: local algorithms for document fingerprinting*,
SIGMOD 2003), applied to one function at a time. A function becomes a stream of tokens in
which nothing a cosmetic edit changes survives, the stream is cut into k-grams, and a few
of their hashes, chosen by winnowing, are its *fingerprints*. Two functions share code
where they share fingerprints.

**The stream** (:func:`code_of`). From the function's syntax tree, not its text:

* left out: the docstring, the argument checks and the array-module line (plumbing, not
  maths: :func:`npseq._checks.is_check_statement`), decorators, comments and layout;
* left out, as edits that change nothing: ``pass``, bare constants and names, ``assert``,
  ``del``, a statement that only names a value again (``Wx = cache.Wx``, ``x, W = cache``: an
  alias), and an assignment to a name nothing reads (dead code), until none is left;
* statements that do not depend on each other (neither reads what the other writes, nor both
  write one name) are put in one canonical order, so that reordering them changes nothing;
* every name becomes ``V``, a dotted name or an attribute (``np.sum``, ``cache.Wx.T``,
  ``.sum``) is folded into the token before it, every number becomes ``N`` and every string
  ``S``; keywords and operators stay;
* the helper functions of the same file that the function calls (but the graded exercises,
  which are compared on their own) follow its body, so extracting or inlining a helper moves
  code without removing it.

**The fingerprints** (:func:`fingerprints`): the hash of every run of :data:`K` tokens; of each
window of :data:`W` consecutive hashes the smallest (the rightmost of equal ones) is kept.
Any shared run of at least ``W + K - 1`` tokens is then found in both, and no run shorter
than ``K`` ever is (the noise threshold). With ``W <= K`` the k-grams of a shared run overlap,
so the tokens they cover are the run itself.

**The score** (:func:`compare`): the share of the learner's own tokens that fingerprints
shared with the other function cover. *Own* leaves out the statements that are the
hand-out's formulas written as code (:func:`hint_formulas`: a statement whose tokens, ``*`` and
parentheses aside, are a formula of the exercise's docstring), which never count as copied.
A function with fewer than :data:`SIZE_FLOOR` own tokens is too short to compare: independent
solutions of a short exercise converge on the same code, so its likeness says nothing.
"""
from __future__ import annotations

import ast
import builtins
import copy
import dataclasses
import hashlib
import io
import keyword
import re
import tokenize

from .. import backend
from .._checks import is_check_statement

K = 12
"""Tokens in a k-gram: no run of fewer shared tokens is ever a match (``x = a @ b`` is five)."""

W = 5
"""Winnowing window, in k-grams: every shared run of ``W + K - 1`` tokens or more is found."""

SIZE_FLOOR = 100
"""Own tokens (the hand-out's formulas aside) below which a function is too short to compare: measured on the
honesty corpus (``python benchmarks/honesty/measure.py``), where independent solutions converge below it."""

SIMILAR_AT = 0.65
"""The share of a function's own tokens found in another text at and above which it is called a copy (the same
script prints the curve this was read from: no honest solution at or above it, every judged copy at or above it)."""

_DROPPED_BY_HINT = frozenset({"*", "(", ")"})
"""Tokens left out when a statement is held against a formula of the hand-out (which writes ``i (1 - i)``)."""


@dataclasses.dataclass(frozen=True)
class Token:
    """One token of a normalised stream, with the lines of the statement it comes from (in its own text)."""
    text: str
    lines: tuple     # (first, last) line of its statement
    hint: bool       # its statement is one of the hand-out's formulas written as code


@dataclasses.dataclass(frozen=True)
class Code:
    """A function as the measure sees it: its label, its text, its tokens and their fingerprints."""
    label: str
    text: str                # the function's own text (the file's lines it spans, and its helpers')
    first_line: int          # the text's first line in its file
    tokens: tuple            # Token
    prints: dict             # hash -> token positions where a fingerprint with that hash starts

    @property
    def own(self) -> int:
        """How many of its tokens are its own (not the hand-out's formulas)."""
        return sum(not token.hint for token in self.tokens)


@dataclasses.dataclass(frozen=True)
class LinePair:
    """A stretch of shared code: the lines in the learner's file and in the other text (both ``(first, last)``)."""
    yours: tuple
    theirs: tuple


@dataclasses.dataclass(frozen=True)
class Similarity:
    """How much of ``Code`` *a* is found in ``Code`` *b*."""
    score: float      # shared own tokens / own tokens of a, in [0, 1]
    shared: int       # own tokens of a covered by fingerprints of b
    own: int          # own tokens of a
    pairs: tuple      # LinePair, in the order of a


# ------------------------------------------------------------------ the stream
_FORMULA = re.compile(r"([A-Za-z_][\w\[\], ]*?)\s*\+?=\s*(.+?)(?=\s{2,}|,\s+[A-Za-z_]\w*\s*\+?=[^=]|$)")
"""``name = right-hand side``, up to two spaces (the next formula, or a remark), a comma before the next formula, or
the line's end."""

_SUM = re.compile(r"\bsum_\w+\s+(.+)")
"""``sum_n da``: a sum over an axis, which code writes ``np.sum(da, axis=0)`` or ``(da).sum(axis=0)``."""


def hint_formulas(docstring: str) -> frozenset:
    """The formulas of an exercise's docstring, whole and right-hand sides alone, as token tuples (``*`` and
    parentheses left out), for :func:`code_of`.

    ``da = dnext_h * (1 - next_h^2)    (N, H)`` gives ``V = V N - V ** N`` and ``V N - V ** N``; a line may hold
    several (``dx = da @ Wx^T         dprev_h = da @ Wh^T``, ``dx = da @ Wx^T, dWx = x^T @ da``); ``^T`` reads as
    ``.T`` and other ``^`` as ``**``, ``sum_n x`` as ``np.sum(x, axis=0)`` or ``x.sum(axis=0)``; a shape or a remark
    after two spaces is left out.
    """
    formulas = set()
    for line in (docstring or "").splitlines():
        line = line.strip().replace("^T", ".T").replace("^", "**")
        for target, value in _FORMULA.findall(line):
            value = value.rstrip(" .,")
            values = [_SUM.sub(r"np.sum(\1, axis=0)", value), _SUM.sub(r"(\1).sum(axis=0)", value)]
            for text in [f"{target} = {v}" for v in values] + values:
                tokens = _reduced(_normalised(text))
                if len(tokens) >= 2:
                    formulas.add(tokens)
    return frozenset(formulas)


def _reduced(tokens) -> tuple:
    return tuple(t for t in tokens if t not in _DROPPED_BY_HINT)


def _distance(a: tuple, b: tuple) -> int:
    """Levenshtein's distance between two token tuples."""
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def _is_formula(tokens: list, hints: frozenset) -> bool:
    """Whether ``tokens`` are one of the hand-out's formulas written as code: equal to one, ``*`` and parentheses
    aside, up to one token in five (none in a formula of five tokens or fewer)."""
    mine = _reduced(tokens)
    for formula in hints:
        slack = len(formula) // 5 if len(formula) > 5 else 0
        if abs(len(mine) - len(formula)) <= slack and (mine == formula or slack and _distance(mine, formula) <= slack):
            return True
    return False


LIBRARY = frozenset(name for name in dir(backend.numpy) + dir(backend.numpy.ndarray)
                    + dir(backend.numpy.add) if not name.startswith("_"))
"""Attribute names that are NumPy's (``.T``, ``.sum``, ``np.einsum``, ``np.add.at``): a copier cannot rename them, so
they stay in the stream; any other attribute (``cache.Wx``) is folded into the token before it."""

CALLED_BUILTINS = frozenset(name for name in dir(builtins) if callable(getattr(builtins, name))
                            and not name.startswith("_"))
"""Built-in functions, which stay in the stream where they are called (``range(``, ``zip(``, ``len(``)."""


def _string(literal: str) -> str:
    """``S`` for a string, but an einsum subscript keeps its pattern with the letters renamed in order of first
    appearance (``'nqk,nkd->nqd'`` reads ``'abc,acd->abd'``): the pattern is the maths, the letters a name."""
    text = literal.strip("'\"")
    if not re.fullmatch(r"[A-Za-z.]+(,[A-Za-z.]+)*(->[A-Za-z.]*)?", text.replace(" ", "")):
        return "S"
    letters = {}
    return "".join(letters.setdefault(c, "abcdefghijklmnopqrstuvwxyz"[len(letters) % 26]) if c.isalpha() else c
                   for c in text.replace(" ", ""))


def _normalised(text: str) -> list:
    """``text``'s tokens: a name becomes ``V`` (a built-in function called, or a keyword argument, stays itself), a
    number ``N``, a string ``S``; an attribute stays (``.sum``) if NumPy has it, and is folded into the token before it
    if not (``cache.Wx.T`` reads ``V .T``); ``[]`` if ``text`` does not tokenize."""
    try:
        raw = [t for t in tokenize.generate_tokens(io.StringIO(text).readline)
               if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                                 tokenize.ENDMARKER) and t.string != ";"]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return []
    out, depth = [], 0
    for index, token in enumerate(raw):
        kind, string = token.type, token.string
        before = raw[index - 1].string if index else ""
        after = raw[index + 1].string if index + 1 < len(raw) else ""
        if string == ".":
            continue
        if kind == tokenize.NAME and before == ".":
            if string in LIBRARY:
                out.append("." + string)
        elif kind == tokenize.NAME and keyword.iskeyword(string):
            out.append(string)
        elif kind == tokenize.NAME:
            keep = (after == "(" and string in CALLED_BUILTINS) or (after == "=" and depth > 0)
            out.append(string if keep else "V")
        elif kind == tokenize.NUMBER:
            out.append("N")
        elif kind == tokenize.STRING:
            out.append(_string(string))
        else:
            depth += string in "([{" and len(string) == 1
            depth -= string in ")]}" and len(string) == 1
            out.append(string)
    return out


def _names(node, kind) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, kind)}


def _reads_writes(statement: ast.stmt) -> tuple:
    """The names a statement reads and writes; a call may change what it is handed (``np.add.at(dW, ...)``), so an
    expression statement writes every name it reads, as does a store into an element or an attribute."""
    reads, writes = set(), set()
    for node in ast.walk(statement):
        if isinstance(node, ast.Name):
            (reads if isinstance(node.ctx, ast.Load) else writes).add(node.id)
        elif isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, ast.Store):
            writes |= _names(node.value, ast.Load)
    if isinstance(statement, ast.Expr):
        writes |= reads
    if isinstance(statement, ast.AugAssign):
        reads |= _names(statement.target, ast.Store)
    return reads, writes


def _is_alias(statement: ast.stmt) -> bool:
    """``Wx = cache.Wx``, ``x, W = cache``, ``dh = dnext_h``: a name for a value that already has one."""
    def plain(node):
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name)

    def names(node):
        return isinstance(node, ast.Name) or (isinstance(node, ast.Tuple) and all(isinstance(e, ast.Name)
                                                                                  for e in node.elts))
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1 and names(statement.targets[0])):
        return False
    value = statement.value
    return plain(value) or (isinstance(value, ast.Tuple) and all(plain(e) for e in value.elts))


def _is_noop(statement: ast.stmt) -> bool:
    if isinstance(statement, (ast.Pass, ast.Assert, ast.Delete)):
        return True
    return isinstance(statement, ast.Expr) and isinstance(statement.value, (ast.Constant, ast.Name))


def _pruned(body: list, read_anywhere: set) -> list:
    """``body`` without no-ops, aliases and assignments to names nothing reads (recursively into blocks)."""
    kept = []
    for statement in body:
        if _is_noop(statement) or _is_alias(statement) or is_check_statement(statement):
            continue
        if isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            stored = set().union(*(_names(target, ast.Store) for target in targets))
            plain = all(isinstance(t, (ast.Name, ast.Tuple)) for t in targets)
            if plain and stored and not stored & read_anywhere:
                continue
        statement = copy.copy(statement)
        for field in ("body", "orelse", "finalbody"):
            block = getattr(statement, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                setattr(statement, field, _pruned(block, read_anywhere))
        kept.append(statement)
    return kept


def _canonical_order(body: list, key) -> list:
    """``body`` in one order that does not depend on how independent statements were ordered: Kahn's topological
    sort of the statements' dependencies, the ready statement with the smallest ``key`` first. A statement with a
    block, a ``return`` or a ``raise`` stays where it is relative to every other."""
    count = len(body)
    effects = [_reads_writes(s) for s in body]
    barrier = [not isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)) for s in body]
    after = [set() for _ in range(count)]
    for j in range(count):
        for i in range(j):
            (ri, wi), (rj, wj) = effects[i], effects[j]
            if barrier[i] or barrier[j] or wi & rj or ri & wj or wi & wj:
                after[j].add(i)
    done, order = set(), []
    while len(order) < count:
        ready = [j for j in range(count) if j not in done and after[j] <= done]
        chosen = min(ready, key=lambda j: (key(body[j]), j))
        done.add(chosen)
        order.append(body[chosen])
    return order


def _statement_tokens(statement: ast.stmt, hints: frozenset) -> list:
    """Tokens of one statement; a statement with blocks gives its header, then each block in canonical order."""
    lines = (statement.lineno, statement.end_lineno or statement.lineno)
    blocks = [block for field in ("body", "orelse", "finalbody") if (block := getattr(statement, field, None))]
    blocks += [handler.body for handler in getattr(statement, "handlers", ())]
    if not blocks:
        return _simple_tokens(statement, hints, lines)
    header = copy.copy(statement)
    for field in ("body", "orelse", "finalbody", "handlers"):
        if hasattr(header, field):
            setattr(header, field, [ast.Pass()] if field == "body" else [])
    tokens = [Token(text, (lines[0], lines[0]), False) for text in _normalised(ast.unparse(header)) if text != "pass"]
    for block in blocks:
        tokens += _block_tokens(block, hints) + [Token("}", (lines[0], lines[0]), False)]
    return tokens


def _simple_tokens(statement: ast.stmt, hints: frozenset, lines: tuple) -> list:
    """Tokens of a statement without a block; the hand-out's formulas in it are marked (:attr:`Token.hint`): the
    statement as a whole, its right-hand side, or each element of a tuple it returns or assigns."""
    value = getattr(statement, "value", None)
    if isinstance(value, ast.Tuple) and isinstance(statement, (ast.Assign, ast.Return)) and value.elts:
        head = "return" if isinstance(statement, ast.Return) else " = ".join(map(ast.unparse, statement.targets)) + " ="
        tokens = [Token(text, lines, False) for text in _normalised(head)]
        for number, element in enumerate(value.elts):
            texts = _normalised(ast.unparse(element))
            hint = bool(hints) and _is_formula(texts, hints)
            tokens += [Token(",", lines, hint)] * bool(number) + [Token(text, lines, hint) for text in texts]
        return tokens
    texts = _normalised(ast.unparse(statement))
    hint = bool(hints) and (_is_formula(texts, hints) or value is not None and
                            _is_formula(_normalised(ast.unparse(value)), hints))
    return [Token(text, lines, hint) for text in texts]


def _block_tokens(body: list, hints: frozenset) -> list:
    tokens = {id(statement): _statement_tokens(statement, hints) for statement in body}
    order = _canonical_order(body, lambda statement: " ".join(token.text for token in tokens[id(statement)]))
    return [token for statement in order for token in tokens[id(statement)]]


def _body(function: ast.FunctionDef) -> list:
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return body


def _helpers(function: ast.FunctionDef, module: ast.Module, not_helpers: frozenset) -> list:
    """The functions of ``module`` that ``function`` calls by name, transitively, in the order first called; not
    those of ``not_helpers`` (graded on their own) nor ``function`` itself."""
    defined = {node.name: node for node in module.body if isinstance(node, ast.FunctionDef)}
    found, pending = [], [function]
    while pending:
        caller = pending.pop(0)
        for node in ast.walk(caller):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                callee = defined.get(node.func.id)
                if callee is not None and callee is not function and callee not in found \
                        and callee.name not in not_helpers:
                    found.append(callee)
                    pending.append(callee)
    return found


def code_of(function: ast.FunctionDef, module: ast.Module, source: str, label: str, *,
            hints: frozenset = frozenset(), not_helpers: frozenset = frozenset()) -> Code:
    """The :class:`Code` of ``function`` (a node of ``module``, parsed from ``source``), with its helpers' bodies after
    its own (see the module docstring).

    Args:
        function: the function's node in ``module``.
        module: the parsed file; its other functions are the helpers ``function`` may call.
        source: the file's text (for :attr:`Code.text`).
        label: what the function is called in a report (``"npseq.functional.recurrent.gru_step_backward"``).
        hints: the hand-out's formulas (:func:`hint_formulas`); a statement that is one is not the function's own.
        not_helpers: names of functions never taken as helpers (the graded exercises).
    """
    parts = [function] + _helpers(function, module, not_helpers)
    tokens = []
    for part in parts:
        body = _body(part)
        tokens += _block_tokens(_pruned(body, set().union(*(_names(s, ast.Load) for s in body))), hints)
    lines = source.splitlines()
    text = "\n".join("\n".join(lines[part.lineno - 1:part.end_lineno]) for part in parts)
    return Code(label, text, function.lineno, tuple(tokens), fingerprints([t.text for t in tokens]))


# ------------------------------------------------------------------ fingerprints and the score
def _hash(gram) -> int:
    return int.from_bytes(hashlib.blake2b("\x00".join(gram).encode(), digest_size=8).digest(), "big")


def fingerprints(tokens: list) -> dict:
    """Winnowing (robust variant): hash every run of :data:`K` tokens, keep the smallest hash of each window of
    :data:`W` consecutive ones (the rightmost on ties). Returns ``hash -> [start positions]``; a stream shorter than
    ``K`` has none, one shorter than ``W + K - 1`` keeps the smallest of what it has."""
    hashes = [_hash(tokens[i:i + K]) for i in range(len(tokens) - K + 1)]
    chosen = set()
    for start in range(max(1, len(hashes) - W + 1)):
        window = hashes[start:start + W]
        if window:
            smallest = min(window)
            chosen.add(start + max(i for i, h in enumerate(window) if h == smallest))
    prints = {}
    for position in sorted(chosen):
        prints.setdefault(hashes[position], []).append(position)
    return prints


def compare(mine: Code, theirs: Code) -> Similarity:
    """How much of ``mine`` is found in ``theirs``: the own tokens of ``mine`` under k-grams whose fingerprints
    ``theirs`` has too, as a share of all its own tokens, and the lines where (:class:`LinePair`)."""
    matched = sorted((position, theirs.prints[h][0]) for h, positions in mine.prints.items() if h in theirs.prints
                     for position in positions)
    covered = set()
    for position, _ in matched:
        covered.update(range(position, position + K))
    shared = sum(1 for index in covered if not mine.tokens[index].hint)
    own = mine.own
    return Similarity(shared / own if own else 0.0, shared, own, _line_pairs(mine, theirs, matched))


def _line_pairs(mine: Code, theirs: Code, matched: list) -> tuple:
    """Runs of matched k-grams (each within ``K`` tokens of the last) as the lines they span on both sides."""
    pairs, run = [], []
    for position, other in matched:
        if run and position - run[-1][0] > K:
            pairs.append(_pair(mine, theirs, run))
            run = []
        run.append((position, other))
    if run:
        pairs.append(_pair(mine, theirs, run))
    return tuple(pairs)


def _pair(mine: Code, theirs: Code, run: list) -> LinePair:
    def span(code, positions):
        lines = [line for p in positions for token in code.tokens[p:p + K] for line in token.lines]
        return (min(lines), max(lines))
    return LinePair(span(mine, [p for p, _ in run]), span(theirs, [o for _, o in run]))


def too_short(own: int) -> bool:
    """Whether a function of ``own`` tokens of its own is too short to compare (under :data:`SIZE_FLOOR`)."""
    return own < SIZE_FLOOR


def is_copy(similarity: Similarity) -> bool:
    """The verdict: not :func:`too_short`, and at least :data:`SIMILAR_AT` of its own tokens shared."""
    return not too_short(similarity.own) and similarity.score >= SIMILAR_AT
