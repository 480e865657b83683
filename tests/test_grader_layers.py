"""The grader's shape: its modules import each other in one direction, each assignment's folder
leans only on the shared checking machinery, and the code that runs in the sandbox imports nothing
of the trusted side. Read from the sources with ast, so the test runs nothing it looks at."""
import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

from grader import course
from utils.paths import REPO_ROOT

GRADER = REPO_ROOT / "grader"
ASSIGNMENTS = sorted(p.parent for p in (GRADER / "assignments").glob("[0-9]*/checks.py"))
# Run inside the sandbox, as files of their own (never imported as grader modules).
SANDBOX_SIDE = ("runner", "zygote", "probe_helpers")
# Imports of grader modules inside a function: each is a heavy import that only one command needs,
# kept out of `python -m grader`'s start (none dodges a cycle: the graph below includes them).
LAZY = {
    ("cli", "sample_submissions"): "nbformat and the toolkit's records (a second): only `samples` needs them",
    ("cli", "autograde"): "torch, nbformat and the grading code (seconds): only `autograde` needs them",
    ("cli", "class_report"): "the class report's code and the toolkit's claims: only `class-report` needs them",
}


def module_name(path: Path) -> str:
    """``checking`` for grader/checking.py; ``assignments.03_building_models.checks`` in a folder."""
    return ".".join(path.relative_to(GRADER).with_suffix("").parts)


def grader_imports(path: Path) -> list[tuple[str, bool]]:
    """(grader module imported, whether inside a function or class) for every import in ``path``;
    ``grader.assignments...`` stays whole, so that an import of an assignment's code shows."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nested = {id(n) for scope in ast.walk(tree) if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
              for n in ast.walk(scope)}
    package = module_name(path).split(".")[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[:len(package) - (node.level - 1)]
            names = [".".join([*base, node.module])] if node.module else [".".join([*base, a.name]) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "grader":
            names = [node.module.removeprefix("grader.")] if node.module != "grader" else [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name.removeprefix("grader.") for a in node.names if a.name.startswith("grader.")]
        else:
            continue
        found += [(name, id(node) in nested) for name in names]
    return found


def shared_modules() -> list[Path]:
    return sorted(GRADER.glob("*.py"))


def test_grader_modules_import_in_one_direction_and_lazily_only_where_listed():
    graph, lazy = {}, set()
    for path in shared_modules() + [folder / "checks.py" for folder in ASSIGNMENTS]:
        imports = grader_imports(path)
        graph[module_name(path)] = {name for name, _ in imports} - {"__init__"}
        lazy |= {(module_name(path), name) for name, inside in imports if inside}
    try:
        order = list(TopologicalSorter(graph).static_order())
    except CycleError as exc:
        raise AssertionError(f"grader modules import each other in a circle: {exc.args[1]}") from None
    assert lazy == set(LAZY), f"imports of grader modules inside functions, unlisted or gone: {lazy ^ set(LAZY)}"
    assert order.index("errors") < order.index("course") < order.index("checking") < order.index("grading") \
        < order.index("autograde") < order.index("cli")


def test_each_assignment_folder_leans_only_on_the_checking_machinery():
    assert [folder.name for folder in ASSIGNMENTS] == [a.id for a in course.assignments()]
    for folder in ASSIGNMENTS:
        assert sorted(p.name for p in folder.glob("*.py")) == ["checks.py", "probes.py"], folder
        assert {name for name, _ in grader_imports(folder / "checks.py")} <= {"checking"}, folder.name


def test_the_shared_machinery_imports_no_assignment():
    for path in shared_modules():
        imported = {name for name, _ in grader_imports(path)}
        assert not {name for name in imported if name.startswith("assignments")}, path.name


def test_sandbox_code_imports_nothing_of_the_trusted_side():
    """The runner, the zygote, the probes' helpers and each folder's probes are files the sandbox
    runs on their own (the probes exec'd into one namespace, helpers first): none imports a grader
    module, nor another probe file. The zygote starts the runner beside it (``import runner``)."""
    files = [GRADER / f"{name}.py" for name in SANDBOX_SIDE] + [folder / "probes.py" for folder in ASSIGNMENTS]
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        modules |= {"." * n.level + (n.module or "") for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        ours = {m for m in modules if m.startswith(".") or m.split(".")[0] in ("grader", "probes", "probe_helpers",
                                                                               "runner", "zygote", "checks")}
        assert ours == ({"runner"} if path.stem == "zygote" else set()), f"{path.relative_to(GRADER)}: {ours}"
