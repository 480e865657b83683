"""The machinery of the trusted checks: they run in the grader's own process, never in the student's.

Each assignment has a folder of its own, ``grader/assignments/<assignment id>/``: the folder's name
is the assignment's id. Its ``checks.py`` defines ``CHECKS``: the inputs the probes get and one check
per graded test cell; its ``probes.py`` (run in the sandbox after ``probe_helpers.py``, the helpers
every assignment's probes share) says what to measure. A check receives the ``Evidence`` (plain data
sent back from the sandbox) and raises ``Fail`` with a message for the student; it recomputes
expected values itself. Messages never quote the checks' code.
"""
from __future__ import annotations

import ast
import importlib
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Callable

import torch

from .course import ASSIGNMENTS_DIR

PROBE_HELPERS = Path(__file__).resolve().parent / "probe_helpers.py"  # sent into the sandbox before probes.py


class Fail(Exception):
    """A failed check; the message is shown to the student."""


@dataclass
class Evidence:
    cells: dict[str, dict] = field(default_factory=dict)    # answer grade_id -> {"ok", "error", "output"}
    probes: dict[str, object] = field(default_factory=dict)  # probe name -> plain data
    sources: dict[str, str] = field(default_factory=dict)    # answer grade_id -> the student's code (trusted copy)
    stopped: dict[str, str] = field(default_factory=dict)    # probe name -> why its process ended without a result
    elsewhere: frozenset[str] = frozenset()                  # names the notebook defines in cells the grader never runs
    failure: str | None = None                               # why the sandbox run ended early
    environment: str | None = None                           # the grader's own failure: no grade may come of it

    def probe(self, name: str):
        if name in self.stopped and name not in self.probes:
            raise Fail(self.stopped[name])
        if name not in self.probes:
            raise Fail(self.failure or f"the grader received no result for {name}")
        return value(self.probes[name], name)


@dataclass(frozen=True)
class Verdict:
    fraction: float
    message: str


@dataclass(frozen=True)
class AssignmentChecks:
    inputs: Callable[[], dict]                                   # probe name -> plain inputs
    tests: dict[str, Callable[[Evidence, dict], None]]           # test grade_id -> check
    folder: Path | None = None                                   # grader/assignments/<id>: set by registry()

    @property
    def probe_files(self) -> list[Path]:
        """The files the sandbox runs, in order, into one namespace: the shared helpers, then this
        assignment's probes (names that differ: the sandbox keeps each under its file name)."""
        return [PROBE_HELPERS, self.folder / "probes.py"]

    def judge(self, evidence: Evidence, inputs: dict) -> dict[str, Verdict]:
        return {grade_id: _run(check, evidence, inputs) for grade_id, check in self.tests.items()}


def _run(check, evidence: Evidence, inputs: dict) -> Verdict:
    try:
        check(evidence, inputs)
    except Fail as failure:
        return Verdict(0.0, explain(str(failure), evidence))
    except Exception as exc:  # malformed data from the sandbox: the check cannot pass
        return Verdict(0.0, f"the answer's results could not be checked ({type(exc).__name__}: {str(exc)[:200]})")
    return Verdict(1.0, "passed")


# "name 'x' is not defined" (Python), "x is not defined: did the answer cell run..." (probes' lookup)
_UNDEFINED = re.compile(r"name '(\w+)' is not defined|(\w+) is not defined: did the answer cell run")


def explain(message: str, evidence: Evidence) -> str:
    """``message``, plus the reason behind a missing name when the evidence shows it: an answer cell
    that failed, or a name the notebook defines only in a cell the grader does not run."""
    matches = _UNDEFINED.findall(message)
    found = [python or ours for python, ours in matches]
    failed = {g: c["error"] for g, c in evidence.cells.items()
              if isinstance(c, dict) and c.get("ok") is False and isinstance(c.get("error"), str)}
    missing = [ours for _, ours in matches if ours]  # an answer's function or class was never defined
    if missing and failed:
        grade_id = next((g for g in failed if g in missing), next(iter(failed)))
        message = f"{message} (the answer cell {grade_id!r} failed: {failed[grade_id][:300]})"
        found += [python or ours for python, ours in _UNDEFINED.findall(failed[grade_id])]
    outside = sorted(set(found) & evidence.elsewhere)
    if outside:
        it = "it" if len(outside) == 1 else "them"
        message += (f"; {', '.join(outside)} {'is' if len(outside) == 1 else 'are'} defined in a cell that the "
                    f"grader does not run (it runs only the answer cells): keep {it}, like any helper, in the answer cell")
    return message


def probe_definitions(folder: Path) -> dict:
    """The names an assignment folder's probes define (e.g. the model architectures the sandbox
    builds), loaded here from the grader's own copy so that both sides use one definition. A checks
    module passes its own folder, ``Path(__file__).parent``."""
    return _definitions(Path(folder).resolve())


@lru_cache(maxsize=None)
def _definitions(folder: Path) -> dict:
    namespace: dict = {"__name__": f"probes.{folder.name}"}  # not "probes": code only the sandbox runs stays out
    for path in (PROBE_HELPERS, folder / "probes.py"):
        exec(compile(path.read_text(encoding="utf-8"), path.name, "exec"), namespace)
    return namespace


def assignment_folders() -> list[Path]:
    """Every assignment's folder (its name starts with a digit, and it holds a ``checks.py``)."""
    return sorted(path.parent for path in ASSIGNMENTS_DIR.glob("[0-9]*/checks.py"))


def checks_module(assignment_id: str) -> ModuleType:
    """An assignment's ``checks.py``, imported (``grader.assignments.<id>.checks``)."""
    return importlib.import_module(f"{__package__}.assignments.{assignment_id}.checks")


def registry() -> dict[str, AssignmentChecks]:
    """Every assignment's checks, by id: each folder's ``checks.py`` defines one ``CHECKS``, here
    bound to its folder (whose name is the assignment's id)."""
    return {folder.name: replace(checks_module(folder.name).CHECKS, folder=folder) for folder in assignment_folders()}


# ---- helpers for checks: validate plain data from the sandbox ---------------------------------

def expect(condition: bool, message: str) -> None:
    if not condition:
        raise Fail(message)


def value(data, what: str):
    """``data`` unless it is the error marker a probe sends when the student's code raised."""
    if isinstance(data, dict) and set(data) == {"error"}:
        raise Fail(f"{what}: your code raised {data['error']}")
    return data


def tensor(data, what: str) -> torch.Tensor:
    data = value(data, what)
    if type(data) is not torch.Tensor:
        raise Fail(f"{what} is not a plain torch.Tensor (got {str(data)[:80]!r})")
    return data


def close(actual, expected: torch.Tensor, what: str, rtol: float = 1e-5, atol: float = 1e-5) -> None:
    actual = tensor(actual, what)
    expect(actual.shape == expected.shape, f"{what}: shape {tuple(actual.shape)}, expected {tuple(expected.shape)}")
    expect(actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype}, expected {expected.dtype}")
    if not torch.allclose(actual, expected, rtol=rtol, atol=atol):
        worst = (actual.double() - expected.double()).abs().max().item()
        raise Fail(f"{what}: values differ from the expected result (largest difference {worst:.3g})")


def equal(actual, expected: torch.Tensor, what: str) -> None:
    close(actual, expected, what, rtol=0.0, atol=0.0)


def uses(source: str, names: set[str], bare: bool = False, self_checks: bool = False) -> set[str]:
    """Which of ``names`` the code reaches by attribute (``F.one_hot``), by a name it imports and then
    uses (``from torch import cdist as d; d(a, b)``), or as a string (``getattr(F, "one_hot")``); with
    ``bare=True`` also as a plain name (one the notebook's import cell binds). A static look at the
    student's source, done here, so nothing in the sandbox can hide it. An import alone does nothing
    (the notebook's import line, copied), and top-level ``assert`` and expression statements, alone or
    in a ``for``/``if``/``with`` block of nothing else, are the answer's own self-checks
    (``assert torch.equal(one_hot(l, 3), F.one_hot(l, 3))``): neither counts, unless
    ``self_checks=True`` (where a call at cell level could change what is graded)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    if not self_checks:
        read = _read_in_definitions(tree)
        tree.body = [node for node in tree.body if not _self_check(node, read)]
    used_names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in names:
            found.add(node.attr)
        elif bare and isinstance(node, ast.Name) and node.id in names:
            found.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            # `import torch._dynamo` binds `torch`: what it reaches shows as attributes, found above
            found |= {a.name.rsplit(".", 1)[-1] for a in node.names
                      if (a.asname or (a.name if isinstance(node, ast.ImportFrom) else None)) in used_names} & names
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
            found.add(node.value)  # getattr(F, "one_hot")
    return found


def _self_check(node: ast.stmt, read: set[str], in_block: bool = False) -> bool:
    """An assert or expression statement, or a for/if/with block of those and of assignments to names
    that no function or class of the cell reads (``for _c in (3, 5): _l = ...; assert ...``)."""
    if isinstance(node, (ast.Assert, ast.Expr, ast.Pass)):
        return True
    if in_block and isinstance(node, ast.Assign):
        return not {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)} & read
    return isinstance(node, (ast.For, ast.If, ast.With)) and all(
        _self_check(n, read, in_block=True) for n in node.body + getattr(node, "orelse", []))


def _read_in_definitions(tree: ast.Module) -> set[str]:
    """The names read inside the cell's functions, classes and lambdas."""
    scopes = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda))]
    return {n.id for scope in scopes for n in ast.walk(scope) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def needs_data(rec) -> bool:
    """Whether a call on the meta device (shapes, no data: it stands in for a GPU) failed only for want
    of values, as an answer that validates its input does: such a case cannot tell where tensors go."""
    error = str(rec.get("error", "")).lower() if isinstance(rec, dict) else ""
    return "meta" in error and "device" not in error and "copy out" not in error


class _Bound(ast.NodeVisitor):
    """The names a module's top level binds (a function's or class's body is its own scope)."""

    def __init__(self):
        self.names: set[str] = set()

    def visit_FunctionDef(self, node):
        self.names.add(node.name)

    visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef

    def visit_Lambda(self, node):
        pass

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_Lambda

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Store):
            self.names.add(node.id)

    def visit_alias(self, node):
        self.names.add(node.asname or node.name.split(".")[0])


def defined_names(source: str) -> set[str]:
    """The names a notebook cell defines at its top level (IPython magics allowed); a static look."""
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        tree = ast.parse(TransformerManager().transform_cell(source))
    except Exception:  # not Python (any error the parser or the magics' translation raises)
        return set()
    bound = _Bound()
    bound.visit(tree)
    return bound.names
