"""cudaload's structure: layers that import only downward, no import circle, small documented modules.

Every import counts, those inside functions too (they are how circles used to hide).
"""

from __future__ import annotations

import ast
import os
import re

import pytest

from tests._support import ROOT

PACKAGE = os.path.join(ROOT, "cudaload")
FOUNDATION = {"errors", "_version"}  # the foundation outside cudaload/_base
ENTRY = {"availability", "_report", "__main__", "__init__"}
RANK = {"_base": 0, "bindings": 1, "compile": 2, "launch": 3, "cli": 4, "wheelcheck": 4}


def _modules() -> dict[str, str]:
    found = {}
    for folder, _dirs, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                dotted = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                found[dotted.removesuffix(".__init__")] = path
    return found


MODULES = _modules()


def _rank(module: str) -> int:
    parts = module.split(".")
    if len(parts) >= 2 and parts[1] in RANK:
        return RANK[parts[1]]
    leaf = parts[-1] if len(parts) > 1 else "__init__"
    if leaf in FOUNDATION:
        return 0
    assert leaf in ENTRY, f"{module}: place it in a layer (tests/test_layers.py lists them)"
    return 4


def _type_only(tree: ast.Module) -> set[int]:
    """The ids of the nodes inside ``if TYPE_CHECKING:`` blocks: imports for type checkers (an
    annotation may name a class of a layer above), never run (the modules set TYPE_CHECKING =
    False), so no arrow of the import graph."""
    return {id(node) for block in ast.walk(tree) if isinstance(block, ast.If)
            and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING"
            for stmt in block.body for node in ast.walk(stmt)}


def _imports(module: str, path: str, type_only: bool = False) -> set[str]:
    """Every cudaload module that ``module`` imports, anywhere in it but type-only blocks (with
    ``type_only``: those blocks' imports alone)."""
    package = module if path.endswith("__init__.py") else module.rsplit(".", 1)[0]
    out = set()
    tree = ast.parse(open(path).read())
    skipped = _type_only(tree)
    for node in ast.walk(tree):
        if (id(node) in skipped) != type_only:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if node.module and target in MODULES:  # "from . import x" names x, not the package
                out.add(target)
            for alias in node.names:
                if f"{target}.{alias.name}" in MODULES:
                    out.add(f"{target}.{alias.name}")
        elif isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names if alias.name in MODULES}
    out.discard(module)
    return out


GRAPH = {module: _imports(module, path) for module, path in MODULES.items()}
# What type checkers follow: the imports that run and the type-only ones together.
TYPED_GRAPH = {module: GRAPH[module] | _imports(module, path, type_only=True)
               for module, path in MODULES.items()}


def test_every_module_is_in_a_layer():
    for module in MODULES:
        _rank(module)


@pytest.mark.parametrize("graph", [GRAPH, TYPED_GRAPH], ids=["imports", "with type-only imports"])
def test_no_module_imports_a_layer_above_its_own(graph):
    upward = [f"{module} (layer {_rank(module)}) imports {target} (layer {_rank(target)})"
              for module, targets in graph.items() for target in targets
              if _rank(target) > _rank(module) and module != "cudaload"]
    # The package itself is the top: it may name any layer.
    assert upward == []


@pytest.mark.parametrize("graph", [GRAPH, TYPED_GRAPH], ids=["imports", "with type-only imports"])
def test_there_is_no_import_circle(graph):
    # Type-only imports count too: a circle through one is still two modules that each need the
    # other to be read (by mypy, by a reader), and it hides a layer named from below.
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph[module]):
            # Importing a submodule imports its package first: that edge is no circle.
            if module.startswith(target + "."):
                continue
            if state.get(target) == 1:
                circle = path[path.index(target):] + [target]
                pytest.fail("import circle: " + " -> ".join(circle))
            if target not in state:
                visit(target)
        path.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)


LAYER_RULE = {  # what each package's docstring (or the entry point's) says its modules may import
    1: "Layer 1, bindings: may import the foundation and bindings.",
    2: "Layer 2, compile: may import the foundation, bindings and compile.",
    3: "Layer 3, launch: may import the foundation, bindings, compile and launch.",
    4: "Entry point: may import every layer.",
}


def _docstring(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return " ".join((ast.get_docstring(ast.parse(f.read())) or "").split())


def test_each_layer_states_its_rule_once_in_its_package():
    # The rule is written where a reader of the layer starts (its package docstring), not repeated
    # in every module: the checks above enforce it for each module.
    for package, rank in (("cudaload.bindings", 1), ("cudaload.compile", 2), ("cudaload.launch", 3),
                          ("cudaload", 4), ("cudaload.wheelcheck", 4)):
        assert LAYER_RULE[rank] in _docstring(MODULES[package]), package
    repeated = [m for m, path in MODULES.items() if not path.endswith("__init__.py")
                and any(rule in _docstring(path) for rule in LAYER_RULE.values())]
    assert repeated == [], f"the layer rule belongs in the package docstring only: {repeated}"


def test_modules_are_small_and_say_what_they_hold():
    for module, path in MODULES.items():
        with open(path) as f:
            text = f.read()
        if text.startswith("# GENERATED"):
            continue
        assert ast.get_docstring(ast.parse(text)), f"{module} has no docstring"
        lines = text.count("\n")
        assert lines <= 400, f"{module} has {lines} lines: split it by what it holds"


def test_every_lock_is_made_with_thread():
    # cudaload/__init__.py states the one rule: locks come from _thread, never from threading.
    made = [f"{m}: {line.strip()}" for m, path in MODULES.items()
            for line in open(path, encoding="utf-8")
            if re.search(r"threading\.(Lock|RLock|Condition|Semaphore)\(", line)
            and "``" not in line and not line.lstrip().startswith("#")]
    assert made == []


def test_the_checks_see_the_imports_inside_functions():
    # The compile side must reach the launch side only through compile/_hooks.py; this finds an
    # import of it even when written inside a function.
    assert "cudaload.launch.module" not in GRAPH["cudaload.compile.objectcode"]
    assert "cudaload.launch.module" in GRAPH["cudaload"]  # imported inside a function there


def test_every_import_inside_a_function_says_why_it_is_deferred():
    # An import inside a function is deliberate (import cost, or a layer it may reach only on
    # first use); each says so with a "# deferred: why" comment, on its line or the one above,
    # so a reader can tell it from one that merely forgot to be at the top.
    unmarked = []
    for module, path in MODULES.items():
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for sub in ast.walk(node):
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    here, above = lines[sub.lineno - 1], lines[sub.lineno - 2]
                    if "deferred" not in here and not above.strip().startswith("# deferred"):
                        unmarked.append(f"{module}:{sub.lineno}: {here.strip()}")
    assert sorted(set(unmarked)) == [], "\n".join(sorted(set(unmarked)))


def test_type_only_imports_are_no_arrow_but_never_run():
    # Program's annotations name the modules that compiling imports later (plan.py, ...): in a
    # block that runs for type checkers only, which the run-time import graph leaves out (the
    # typed one has it: the tests above); at run time the block is dead.
    path = MODULES["cudaload.compile.program"]
    tree = ast.parse(open(path).read())
    assert _type_only(tree)  # the block is there, and seen
    assert "cudaload.compile.plan" in TYPED_GRAPH["cudaload.compile.program"]
    for module, path in MODULES.items():
        tree = ast.parse(open(path).read())
        if not _type_only(tree):
            continue
        bound = [node for node in tree.body if isinstance(node, ast.Assign)
                 and [getattr(t, "id", None) for t in node.targets] == ["TYPE_CHECKING"]]
        imported = [node for node in tree.body if isinstance(node, ast.ImportFrom)
                    and node.module == "typing"
                    and any(a.name == "TYPE_CHECKING" for a in node.names)]
        assert imported or (bound and isinstance(bound[0].value, ast.Constant)
                            and bound[0].value.value is False), \
            f"{module}: a TYPE_CHECKING block must never run (TYPE_CHECKING = False)"
