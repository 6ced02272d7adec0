"""The package's import graph, read with ast: no circle, and only ``npseq.__main__`` imports the command line."""
import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "npseq"

# The layers of docs/DESIGN.md, top to bottom: a module may import only from its own layer or one below it.
# The entry points (`python -m npseq`, `python -m npseq.grade`, `python -m npseq.exercises`) stand above all.
LAYERS = (
    ("npseq.__main__", "npseq.grade", "npseq.exercises"),
    ("npseq.cli",),
    ("npseq.commands",),
    ("npseq.course",),
)


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: pathlib.Path) -> set:
    """Every npseq module that ``path`` imports, at the top or inside a function (relative imports resolved)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "npseq"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "npseq":
                continue
            submodules = {f"{target}.{alias.name}" for alias in node.names} & set(MODULES)
            found |= submodules  # `from . import sheet` imports the module sheet, not only the package
            if len(submodules) < len(node.names):
                found.add(target)
    return found


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py")}


def _edges(name: str, path: pathlib.Path) -> set:
    targets = {target for target in imports_of(path) if target in MODULES and target != name}
    if path.name == "__init__.py":  # a package's face re-exporting its own modules is not an arrow of the code
        targets = {target for target in targets if not target.startswith(name + ".")}
    return targets


GRAPH = {name: _edges(name, path) for name, path in MODULES.items()}


def test_the_walk_sees_the_package():
    assert {"npseq.cli", "npseq.course.grader", "npseq.commands.runner", "npseq.functional.recurrent"} <= set(MODULES)
    assert "npseq.course.sheet" in GRAPH["npseq.course.grader"]


def test_no_module_but_main_imports_the_command_line():
    importers = sorted(name for name, targets in GRAPH.items() if "npseq.cli" in targets)
    assert importers == ["npseq.__main__"]


def _a_circle():
    """One import circle as a list of modules (first == last), or None: a depth-first search for a back edge."""
    state, stack = {}, []

    def visit(name):
        state[name] = "open"
        stack.append(name)
        for target in sorted(GRAPH[name]):
            if state.get(target) == "open":
                return stack[stack.index(target):] + [target]
            if target not in state:
                circle = visit(target)
                if circle:
                    return circle
        state[name] = "done"
        stack.pop()
        return None

    for name in sorted(GRAPH):
        if name not in state:
            circle = visit(name)
            if circle:
                return circle
    return None


def test_the_import_graph_has_no_circle():
    assert _a_circle() is None, " -> ".join(_a_circle())


def _layer(name: str):
    for index, layer in enumerate(LAYERS):
        if any(name == top or name.startswith(top + ".") for top in layer):
            return index
    return len(LAYERS)  # the library below the course


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_imports_one_above_it(name):
    upward = sorted(target for target in GRAPH[name] if _layer(target) < _layer(name))
    assert upward == [], f"{name} imports {upward}, which stand above it (docs/DESIGN.md, Layers)"
