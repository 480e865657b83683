"""Grade one submission: answers out of the notebook, into a sandbox, plain data back, verdicts here.

This runs in a trusted worker process (which may be reused: it never runs student code). The
student's answer cells run in a fresh sandbox together with the setup cells taken from the
course's source notebook; the sandbox sends back plain data only, and the assignment's checks
(``grader/assignments/<id>/checks.py``) decide.
"""
from __future__ import annotations

import ast
import hashlib
import io
import json
import re
import shutil
import signal
import struct
import sys
import tempfile
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import nbformat
import torch

from . import checking, course, sandbox, submission
from .checking import Evidence, defined_names, explain, registry

RUNNER = Path(__file__).resolve().parent / "runner.py"
ZYGOTE = Path(__file__).resolve().parent / "zygote.py"


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


_DEADLINE = re.compile(r"stopped (?:it|your code) after (\d+) s")  # the runner's and _stopped's wording
_ERROR_TYPE = re.compile(r"(\w+)(?::|$)")


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def reason(result: Result) -> str:
    """Why the submission lost points, in a few words for its progress line ('' when it lost none,
    or when its notebook could not be read: the note says why). The feedback page has the details."""
    lost = {test: message for test, (fraction, message) in result.verdicts.items() if fraction < 1}
    if not lost or result.unreadable:
        return ""
    failed = [(g, c["error"]) for g, c in result.cells.items() if isinstance(c, dict) and isinstance(c.get("error"), str)]
    if failed:
        grade_id, error = failed[0]
        hit, kind = _DEADLINE.search(error), _ERROR_TYPE.match(error)
        text = (f"the answer cell {grade_id} stopped at the {hit[1]} s deadline" if hit
                else f"{kind[1] if kind else 'an error'} in the answer cell {grade_id}")
        return text + (f" (and {_count(len(failed) - 1, 'other answer cell')} failed)" if len(failed) > 1 else "")
    hits = [m for m in map(_DEADLINE.search, lost.values()) if m]
    if hits:
        rest = len(lost) - len(hits)
        return (f"{_count(len(hits), 'test')} stopped at the {hits[0][1]} s deadline"
                + (f", {rest} more not passed" if rest else ""))
    test, message = next(iter(lost.items()))
    message = " ".join(message.split())
    return f"{_count(len(lost), 'test')} not passed, e.g. {test}: " + (message[:80] + " ..." if len(message) > 80 else message)


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
    """Changes whenever anything that decides this assignment's grades changes: the sandbox's code,
    this module, the checks' shared machinery, this assignment's own code (its folder's ``checks.py``
    and ``probes.py``) and its source notebook. Another assignment's folder is no part of it, nor are
    this one's sample submissions and scores.toml: they test the grader, they grade no one."""
    assignment = course.find(assignment_id)
    files = [RUNNER, ZYGOTE, Path(__file__).resolve(), Path(checking.__file__).resolve(), checking.PROBE_HELPERS,
             *sorted(assignment.grader_dir.glob("*.py")), assignment.source_dir / assignment.notebook_name]
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def grade(folder: Path, student: str, assignment_id: str, slot: int | None = None,
          limits: sandbox.Limits = sandbox.Limits(), isolate: bool = True, warm: bool = True,
          batch: frozenset[str] | None = None) -> Result:
    """Grade one submission. ``warm``: in this process's warm sandbox for ``slot`` (started on first
    use; a cold sandbox when none can run here, or when it fails: the result's notes say so). The warm
    sandbox imports what the setup cells of the ``batch``'s assignments import (None: every one's)."""
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
    job = _job(cells.setup, {g: s for g, s in code.items() if g not in cells.unrun}, checks, list(inputs),
               limits, isolate)
    run = None
    warm_sandbox = _warm_sandbox(slot, limits, batch) if warm and isolate and slot is not None else None
    if warm_sandbox is not None:
        try:
            run = warm_sandbox.run({"job": job, "probes": {p.name: p.read_text(encoding="utf-8")
                                                           for p in checks.probe_files}}, _saved(inputs))
        except sandbox.WarmUnavailable as exc:
            result.notes.append(f"graded in a fresh sandbox: the grading worker's warm one failed ({exc})")
    if run is None:
        run = _run_cold(job, checks, inputs, slot, limits, isolate)
    evidence = parse(run, limits, isolate)
    result.seconds = time.monotonic() - start
    if evidence.environment:
        result.environment = evidence.environment
        return result
    evidence.sources = code
    evidence.elsewhere = _defined_elsewhere(answers.nb, set(code) - cells.unrun)
    result.cells = evidence.cells
    result.verdicts = {k: (v.fraction, v.message) for k, v in checks.judge(evidence, inputs).items()}
    for ran in result.cells.values():  # an answer cell's own error, as the feedback page shows it
        if isinstance(ran, dict) and isinstance(ran.get("error"), str):
            ran["error"] = explain(ran["error"], evidence)
    if evidence.failure:
        result.notes.append(evidence.failure)
    return result


def _run_cold(job: dict, checks, inputs: dict, slot: int | None, limits: sandbox.Limits,
              isolate: bool) -> sandbox.RunResult:
    """The job in a sandbox of its own: a fresh Python, which imports everything again."""
    with tempfile.TemporaryDirectory(prefix="grade-job-") as folder:
        job_dir = Path(folder)
        shutil.copy(RUNNER, job_dir / "runner.py")
        for path in checks.probe_files:
            shutil.copy(path, job_dir / path.name)
        (job_dir / "job.json").write_text(json.dumps(job), encoding="utf-8")
        torch.save(inputs, job_dir / "inputs.pt")
        for path in job_dir.iterdir():
            path.chmod(0o644)
        job_dir.chmod(0o755)  # readable by the sandbox's unprivileged uid, writable by nobody there
        job_path = sandbox.JOB_MOUNT if isolate else str(job_dir)
        return sandbox.run(job_dir, [sys.executable, f"{job_path}/runner.py", job_path, "{fd}"], slot=slot,
                           limits=limits, isolate=isolate)


def _job(setup, answers: dict[str, str], checks, probes: list[str], limits: sandbox.Limits, isolated: bool) -> dict:
    return {"setup": list(setup), "answers": answers, "probes": probes,
            "probe_files": [path.name for path in checks.probe_files], "cell_s": limits.cell_s,
            "frame_bytes": limits.output_bytes, "isolated": isolated}


def _saved(inputs: dict) -> bytes:
    buffer = io.BytesIO()
    torch.save(inputs, buffer)
    return buffer.getvalue()


_WARM: dict[int, tuple[tuple, sandbox.WarmSandbox]] = {}   # slot -> ((limits, batch), its warm sandbox)
_COLD_ONLY: list[str] = []   # why warm sandboxes cannot start in this process, once known


def _warm_sandbox(slot: int, limits: sandbox.Limits, batch: frozenset[str] | None = None) -> sandbox.WarmSandbox | None:
    """This process's warm sandbox for ``slot``, started (or restarted) when needed, one per slot;
    None when they cannot run here (said once on stderr: every submission is then graded in a cold
    sandbox)."""
    if _COLD_ONLY:
        return None
    key, warm = _WARM.pop(slot, (None, None))
    if warm is not None and key == (limits, batch) and warm.alive():
        _WARM[slot] = key, warm
        return warm
    if warm is not None:
        warm.close()
    try:
        warm = sandbox.WarmSandbox([RUNNER, ZYGOTE], preload_modules(batch), slot, limits)
    except sandbox.WarmUnavailable as exc:
        _COLD_ONLY.append(str(exc))
        print(f"grader: {exc}; grading each submission in a cold sandbox", file=sys.stderr)
        return None
    _WARM[slot] = (limits, batch), warm
    return warm


@lru_cache(maxsize=16)
def preload_modules(batch: frozenset[str] | None = None) -> list[str]:
    """What the setup cells of the ``batch``'s assignments (None: every assignment's) import (``from
    X import a``: X, and X.a in case it is a module): a warm sandbox imports them once, before any
    child starts. A batch without 08 skips torch._dynamo, about 2 core-seconds per warm sandbox."""
    names: dict[str, None] = {}
    for assignment in course.assignments():
        if batch is not None and assignment.id not in batch:
            continue
        for source in source_cells(assignment.id).setup:
            try:
                tree = ast.parse(source)
            except SyntaxError:
                continue
            for node in tree.body:
                if isinstance(node, ast.Import):
                    names.update(dict.fromkeys(alias.name for alias in node.names))
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    names[node.module] = None
                    names.update(dict.fromkeys(f"{node.module}.{alias.name}" for alias in node.names))
    return list(names)


def _defined_elsewhere(nb, ran: set[str]) -> frozenset[str]:
    """Names the student's notebook defines in code cells the grader does not run (its own copy of
    the setup cells included: the grader runs the course's), for messages about a missing name."""
    names: set[str] = set()
    for cell in nb.get("cells", []):
        meta = cell.get("metadata", {}).get("nbgrader")
        source = cell.get("source")
        if (cell.get("cell_type") == "code" and isinstance(source, str)
                and (meta.get("grade_id") if isinstance(meta, dict) else None) not in ran):
            names |= defined_names(source)
    return frozenset(names)


# ---- reading what the sandbox sent ----------------------------------------------------------

def parse(run: sandbox.RunResult, limits: sandbox.Limits, isolated: bool = True) -> Evidence:
    """Frames -> Evidence. Anything that is not plain data is rejected, never executed.

    Frames before ``setup_done`` were sent before any student code ran, so only they can report
    a failure of the course's own setup; a run that never got that far failed the grader, not the
    student. Neither can a sandbox killed from outside (``isolated``: bubblewrap itself ended by a
    signal the grader did not send; student code cannot reach it) be the student's doing."""
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
        elif kind == "stopped":
            evidence.stopped.setdefault(name, _stopped(name, body, limits))
        elif kind == "setup" and not setup_done:
            error = body.get("error") if isinstance(body, dict) else body
            evidence.environment = evidence.environment or f"the course's setup code failed in the sandbox: {error}"
        elif kind == "setup_done":
            setup_done = True
        elif kind == "done":
            done = True
    if isolated and run.returncode is not None and run.returncode < 0 and not run.output_truncated:
        evidence.environment = (f"the sandbox was killed from outside by {_signal_name(-run.returncode)} "
                                "(not by the grader's limits, and student code cannot reach it)")
    if not setup_done and evidence.environment is None:
        evidence.environment = (f"the sandbox stopped before the course's setup code finished "
                                f"({_why_stopped(run, limits).replace('your code', 'the setup code')}); "
                                f"its log ends: {run.log.strip()[-600:] or '(empty)'}")
    if not done and evidence.failure is None:
        evidence.failure = _why_stopped(run, limits, isolated)
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


def _why_stopped(run: sandbox.RunResult, limits: sandbox.Limits, isolated: bool = True) -> str:
    if run.timed_out:
        return (f"the grader stopped your code after {limits.wall_s:.0f} s, the time limit for the whole notebook, "
                "so the checks after that point could not run")
    if run.output_truncated:
        return "your code produced more output than the grader accepts, so the grader stopped it"
    code = run.returncode or 0
    signum = -code if code < 0 else code - 128 if isolated and code > 128 else 0  # bubblewrap reports 128 + signal
    if signum:
        return f"your code's process {_killed(signum, limits)}, so the checks after that point could not run"
    return (f"your code ended its process early (exit code {code}: os._exit or similar), "
            "so the checks after that point could not run")


def _stopped(name: str, body, limits: sandbox.Limits) -> str:
    """The message for a probe whose process the runner reports as ended without a result."""
    body = body if type(body) is dict else {}
    reason, status = body.get("reason"), body.get("status") if type(body.get("status")) is int else 0
    if reason == "timeout":
        return (f"{name}: the grader stopped your code after {limits.cell_s} s: it did not finish in time "
                "(an endless loop, or far slower than needed?)")
    if reason == "output":
        return f"{name}: your code's result was larger than the grader accepts ({limits.output_bytes // 2**20} MiB)"
    if reason == "fork":
        return (f"{name}: the grader could not start a process to check it: the limit on processes or open files "
                "was reached (does your code leave processes running or files open?)")
    if reason == "signal":
        return f"{name}: your code's process {_killed(status, limits)} before it returned a result"
    return f"{name}: your code ended its process (exit code {status}: os._exit or similar) before it returned a result"


def _killed(signum: int, limits: sandbox.Limits) -> str:
    name = _signal_name(signum)
    if signum == signal.SIGKILL:
        return (f"was killed ({name}): it ran out of memory or of CPU time ({limits.cpu_s} s), "
                "or the code killed its own process")
    if signum == signal.SIGXCPU:
        return f"used up its CPU time ({limits.cpu_s} s)"
    if signum in (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGABRT):
        return f"crashed ({name})"
    return f"was stopped by {name}"


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
