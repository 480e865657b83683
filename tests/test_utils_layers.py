"""The code's shape: modules import downward only, and the grader's import of utils stays light."""
import ast
import subprocess
import sys
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

from utils.paths import REPO_ROOT

UTILS = REPO_ROOT / "utils"
GRADER = REPO_ROOT / "grader"


def relative_imports(path: Path) -> tuple[set[str], list[str]]:
    """(modules of utils imported at module level, those imported inside a function or class)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top, nested = set(), []

    def targets(node: ast.ImportFrom) -> set[str]:
        if node.module:
            return {node.module.split(".")[0]}
        return {alias.name for alias in node.names}

    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            top |= targets(node)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            nested += [f"{path.name}:{n.lineno}" for n in ast.walk(node)
                       if isinstance(n, ast.ImportFrom) and n.level == 1]
    return top, nested


def import_order(graph: dict[str, set[str]], package: str) -> list[str]:
    """The modules from the bottom up; a circle fails the test, naming it."""
    try:
        return list(TopologicalSorter(graph).static_order())
    except CycleError as exc:
        raise AssertionError(f"{package} modules import each other in a circle: {exc.args[1]}") from None


def test_utils_modules_import_downward_only():
    graph, nested = {}, []
    for path in sorted(UTILS.glob("*.py")):
        top, inside = relative_imports(path)
        graph[path.stem] = top - {"__init__"}
        nested += inside
    assert not nested, f"imports of the toolkit inside functions (a cycle dodged?): {nested}"
    order = import_order(graph, "utils")
    assert order.index("comparison") < order.index("verdict") < order.index("present") < order.index("bench")


def test_importing_the_paths_does_not_load_torch():
    code = "import sys, utils.paths, grader.course; print('torch' in sys.modules, 'matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_the_notebook_import_line_does_not_load_matplotlib():
    code = ("import sys; from utils import Table, bench, setup, memory; "
            "print('matplotlib' in sys.modules, callable(setup), bench.compare.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, check=True)
    assert out.stdout.split() == ["False", "True", "utils.bench"]


@pytest.mark.parametrize("entry", ["grader.autograde", "utils.execute"])
def test_reading_a_notebook_does_not_compile_the_iri_grammars(entry):
    """jsonschema would import rfc3987_syntax (a second of CPU in each grader and runner process)."""
    code = (f"import sys, {entry}, nbformat; nbformat.validate(nbformat.v4.new_notebook()); "
            "print('rfc3987_syntax' in sys.modules, sys.modules.get('rfc3987_syntax'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, check=True)
    assert out.stdout.split() == ["True", "None"], out.stdout  # asked for, and refused


def test_grader_modules_import_downward_only_even_inside_functions():
    graph = {}
    for path in sorted(GRADER.glob("*.py")):
        top, inside = relative_imports(path)
        nested = {n.module.split(".")[0] for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                  if isinstance(n, ast.ImportFrom) and n.level == 1 and n.module} - top
        graph[path.stem] = (top | nested) - {"__init__"}
    order = import_order(graph, "grader")
    assert order.index("errors") < order.index("database") < order.index("course") < order.index("gradebook")


def test_one_repo_root():
    defined = [f"{p.relative_to(REPO_ROOT)}" for p in REPO_ROOT.glob("*/*.py")
               if any(isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "REPO_ROOT" for t in n.targets)
                      for n in ast.parse(p.read_text(encoding="utf-8")).body)]
    assert defined == ["utils/paths.py"]
