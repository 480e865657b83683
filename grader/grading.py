"""Grade one submission: answers out of the notebook, into a sandbox, plain data back, verdicts here.

This runs in a trusted worker process (which may be reused: it never runs student code). The
student's answer cells run in a fresh sandbox together with the setup cells taken from the
course's source notebook; the sandbox sends back plain data only, and the checks in
``grader/checks`` decide.
"""
from __future__ import annotations

import hashlib
import io
import json
import shutil
import struct
import sys
import tempfile
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import nbformat
import torch

from . import course, sandbox, submission
from .checks import Evidence, registry

RUNNER = Path(__file__).resolve().parent / "runner.py"


@dataclass
class Result:
    """Everything the single gradebook writer needs; plain data, so it crosses processes."""
    student: str
    assignment: str
    verdicts: dict[str, tuple[float, str]] = field(default_factory=dict)  # test id -> (fraction, message)
    answers: dict[str, str] = field(default_factory=dict)                 # answer id -> student's source
    cells: dict[str, dict] = field(default_factory=dict)                  # answer id -> how it ran
    notes: list[str] = field(default_factory=list)
    sha256: str | None = None
    unreadable: str | None = None       # the notebook could not be read: every test scores 0
    environment: str | None = None      # the grading environment failed: NOT the student's grade
    seconds: float = 0.0


@dataclass(frozen=True)
class SourceCells:
    """What the course's source notebook says about one assignment's cells."""
    setup: tuple[str, ...]      # setup cell sources, run before any answer
    answers: tuple[str, ...]    # answer code cells, in order
    unrun: frozenset[str]       # answer cells kept for the instructor but not run (measurements)
    written: tuple[str, ...]    # manually graded answers: the instructor's points, never the grader's


@lru_cache(maxsize=None)
def source_cells(assignment_id: str) -> SourceCells:
    assignment = course.find(assignment_id)
    nb = nbformat.read(assignment.source_dir / assignment.notebook_name, as_version=4)
    setup = tuple(c.source for c in nb.cells if c.cell_type == "code" and "setup" in c.metadata.get("tags", []))
    return SourceCells(setup, tuple(course.answer_cells(nb)), frozenset(course.measurement_cells(nb)),
                       tuple(course.manual_cells(nb)))


def fingerprint(assignment_id: str) -> str:
    """Changes whenever anything that decides this assignment's grades changes."""
    assignment = course.find(assignment_id)
    here = Path(__file__).resolve().parent
    files = [RUNNER, Path(__file__).resolve(), *sorted(here.glob("checks/*.py")), *sorted(here.glob("probes/*.py")),
             assignment.source_dir / assignment.notebook_name]
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def grade(folder: Path, student: str, assignment_id: str, slot: int | None = None,
          limits: sandbox.Limits = sandbox.Limits(), isolate: bool = True) -> Result:
    start = time.monotonic()
    checks = registry()[assignment_id]
    cells = source_cells(assignment_id)
    result = Result(student, assignment_id)
    try:
        answers = submission.read(folder, course.find(assignment_id).notebook_name, list(cells.answers),
                                  cells.written)
    except submission.Unreadable as exc:
        result.unreadable = str(exc)
        result.verdicts = {test: (0.0, f"not graded: {exc}") for test in checks.tests}
        return result
    result.answers, result.notes, result.sha256 = answers.cells, answers.notes, answers.sha256
    code = {g: s for g, s in answers.cells.items() if g in cells.answers}  # written answers are not code
    inputs = checks.inputs()
    with tempfile.TemporaryDirectory(prefix="grade-job-") as job:
        job_dir = Path(job)
        _write_job(job_dir, cells.setup, {g: s for g, s in code.items() if g not in cells.unrun}, checks,
                   list(inputs), limits.cell_s, isolate)
        torch.save(inputs, job_dir / "inputs.pt")
        for path in job_dir.iterdir():
            path.chmod(0o644)
        job_dir.chmod(0o755)  # readable by the sandbox's unprivileged uid, writable by nobody there
        job_path = sandbox.JOB_MOUNT if isolate else str(job_dir)
        run = sandbox.run(job_dir, [sys.executable, f"{job_path}/runner.py", job_path, "{fd}"], slot=slot,
                          limits=limits, isolate=isolate)
    evidence = parse(run, limits)
    result.seconds = time.monotonic() - start
    if evidence.environment:
        result.environment = evidence.environment
        return result
    evidence.sources = code
    result.cells = evidence.cells
    result.verdicts = {k: (v.fraction, v.message) for k, v in checks.judge(evidence, inputs).items()}
    if evidence.failure:
        result.notes.append(evidence.failure)
    return result


def _write_job(job_dir: Path, setup, answers: dict[str, str], checks, probes: list[str], cell_s: int,
               isolated: bool) -> None:
    shutil.copy(RUNNER, job_dir / "runner.py")
    for path in checks.probe_files:
        shutil.copy(path, job_dir / path.name)
    job = {"setup": list(setup), "answers": answers, "probes": probes,
           "probe_files": [path.name for path in checks.probe_files], "cell_s": cell_s, "isolated": isolated}
    (job_dir / "job.json").write_text(json.dumps(job), encoding="utf-8")


# ---- reading what the sandbox sent ----------------------------------------------------------

def parse(run: sandbox.RunResult, limits: sandbox.Limits) -> Evidence:
    """Frames -> Evidence. Anything that is not plain data is rejected, never executed.

    Frames before ``setup_done`` were sent before any student code ran, so only they can report
    a failure of the course's own setup; a run that never got that far failed the grader, not the
    student."""
    evidence, done, setup_done, offset, data = Evidence(), False, False, 0, run.output
    while offset + 4 <= len(data):
        (size,) = struct.unpack(">I", data[offset:offset + 4])
        payload = data[offset + 4:offset + 4 + size]
        offset += 4 + size
        if len(payload) < size:
            break
        frame = _load(payload)
        if frame is None:
            evidence.failure = "the answer's process sent data that is not plain data; it was ignored"
            continue
        kind, name, body = frame["kind"], frame["name"], frame["data"]
        if kind == "cell" and isinstance(body, dict):
            evidence.cells.setdefault(name, body)
        elif kind == "probe":
            evidence.probes.setdefault(name, body)
        elif kind == "setup" and not setup_done:
            error = body.get("error") if isinstance(body, dict) else body
            evidence.environment = evidence.environment or f"the course's setup code failed in the sandbox: {error}"
        elif kind == "setup_done":
            setup_done = True
        elif kind == "done":
            done = True
    if not setup_done and evidence.environment is None:
        evidence.environment = (f"the sandbox stopped before the course's setup code finished "
                                f"({_why_stopped(run, limits).replace('your code', 'the setup code')}); "
                                f"its log ends: {run.log.strip()[-600:] or '(empty)'}")
    if not done and evidence.failure is None:
        evidence.failure = _why_stopped(run, limits)
    return evidence


def _load(payload: bytes):
    try:
        # map_location: a frame may claim a tensor lives on cuda:0; the trusted side never touches a GPU.
        frame = torch.load(io.BytesIO(payload), weights_only=True, map_location="cpu")
    except Exception:
        return None
    if not (type(frame) is dict and set(frame) == {"kind", "name", "data"}
            and type(frame["kind"]) is str and type(frame["name"]) is str and _plain(frame["data"])):
        return None
    return frame


def _plain(obj, depth: int = 0) -> bool:
    """Exact builtin types and plain strided tensors only: no subclasses, nothing that can lie."""
    if depth > 20:
        return False
    if obj is None or type(obj) in (bool, int, float, str):
        return True
    if type(obj) is torch.Tensor:
        return obj.layout == torch.strided and not obj.requires_grad
    if type(obj) in (list, tuple):
        return all(_plain(x, depth + 1) for x in obj)
    if type(obj) is dict:
        return all(type(k) is str and _plain(v, depth + 1) for k, v in obj.items())
    return False


def _why_stopped(run: sandbox.RunResult, limits: sandbox.Limits) -> str:
    if run.timed_out:
        return f"your code did not finish within {limits.wall_s:.0f} s, so the checks after that point could not run"
    if run.output_truncated:
        return "your code produced more output than the grader accepts"
    if run.returncode is not None and run.returncode < 0:
        return (f"your code's process was stopped by signal {-run.returncode} "
                "(a CPU-time or memory limit, or the code killed itself)")
    return f"your code's process ended early (exit code {run.returncode}) before all checks ran"

