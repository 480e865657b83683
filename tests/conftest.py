import contextlib
import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/submissions.py

# Measurements made by the tests must not land in the course's build/measurements.jsonl.
os.environ["COURSE_RECORDS"] = ""
os.environ.pop("GRADER_DB_URL", None)  # a developer's shared gradebook must never receive the tests' grades


@pytest.fixture
def records_file(tmp_path, monkeypatch):
    path = tmp_path / "measurements.jsonl"
    monkeypatch.setenv("COURSE_RECORDS", str(path))
    return path


@pytest.fixture
def quick_bench():
    from utils import bench

    bench.configure(True)
    yield bench
    bench.configure(False)


# The session's two long, CPU-bound jobs run in the background, one after the other, as soon as
# collection shows that a test needs them (pytest_collection_finish), each in a process forked from
# pytest while it still runs a single thread. The graded batch runs at nice 10, its sandboxes too:
# it takes the cores that the tests leave idle. The QUICK run does not: its notebooks' self-checks
# time phases that sleep, as a learner's run does, and a niced kernel on saturated cores waits tens
# of milliseconds for a core after each sleep (09's find_bottleneck then blamed a 2 ms phase for a
# 25 ms one). The modules that mostly run on one core or wait on subprocesses and timeouts run
# first and leave the jobs a core; then the modules marked `busy`; the jobs' own tests run last.
def _fixtures(item) -> set[str]:
    return set(getattr(item, "fixturenames", ()))


def _order(item) -> tuple[bool, bool]:
    return bool(_fixtures(item) & JOBS.keys()), item.get_closest_marker("busy") is not None


def pytest_collection_modifyitems(config, items):
    """Busy modules after the others, the tests of the background jobs last (a stable sort: a
    module's tests stay together and in order). On the GPU runner (COURSE_REQUIRE_CUDA=1) a CUDA
    test must run: without CUDA, fail instead of skipping."""
    items.sort(key=_order)
    if os.environ.get("COURSE_REQUIRE_CUDA") == "1":
        import torch

        if not torch.cuda.is_available():
            raise pytest.UsageError("COURSE_REQUIRE_CUDA=1 but torch.cuda.is_available() is False: no usable GPU here")


# Notebooks executed at once by the session's QUICK run: their timing windows overlap, which
# makes the (unchecked) figures noisy but the suite much shorter on 2 cores.
NOTEBOOK_JOBS = int(os.environ.get("COURSE_TEST_JOBS", "3"))


class Forked:
    """``job(folder)`` in a process forked now, at ``nice``, in a fresh temporary folder, started once
    the job ``after`` has ended; ``result()`` waits for what it returns (or raises with its
    traceback). Not a ProcessPoolExecutor: that cannot stop a running job when the session ends
    early (pytest -x), and multiprocessing.Pool's daemonic workers may not start the grader's own
    worker processes."""

    def __init__(self, job, nice: int, after: "Forked | None" = None):
        context = multiprocessing.get_context("fork")
        self.folder = Path(tempfile.mkdtemp(prefix=f"pytest-{job.__name__.strip('_')}-"))
        self._answer, send = context.Pipe(duplex=False)
        waits_for = after._process.sentinel if after else None   # inherited by the fork; readable once it ends
        self._process = context.Process(target=self._run, args=(send, job, self.folder, nice, waits_for))
        self._process.start()
        send.close()
        self._result = None

    @staticmethod
    def _run(send, job, folder, nice, waits_for):
        os.setpgid(0, 0)   # a group of its own, which end() kills with the workers and sandboxes it started
        os.nice(nice)      # the grader gives its sandboxes' sessions the same nice (runner.keep_nice)
        if waits_for is not None:
            multiprocessing.connection.wait([waits_for])
        try:
            send.send((True, job(folder)))
        except BaseException:
            send.send((False, traceback.format_exc()))

    def result(self):
        if self._result is None:
            try:
                self._result = self._answer.recv()
            except EOFError:
                self._process.join()
                self._result = False, f"it ended without an answer (exit code {self._process.exitcode})"
        ok, value = self._result
        if not ok:
            raise RuntimeError(f"the background job failed:\n{value}")
        return value

    def end(self):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._process.pid, signal.SIGKILL)
        self._process.join()
        shutil.rmtree(self.folder, ignore_errors=True)


BACKGROUND: dict[str, Forked] = {}


def pytest_collection_finish(session):
    if session.config.option.collectonly:
        return
    needed = {name for item in session.items for name in _fixtures(item)}   # each test's fixture closure
    previous = None
    for name, (job, nice) in JOBS.items():
        if name in needed:
            previous = BACKGROUND[name] = Forked(job, nice, after=previous)


def pytest_sessionfinish(session):
    for job in BACKGROUND.values():
        job.end()


def _quick_runs(out: Path) -> dict:
    from utils.execute import run_many, solution_notebooks, workers

    only = os.environ.get("COURSE_TEST_NOTEBOOKS", "").split()  # a developer's shortcut: these notebooks only
    with workers() as pool:
        runs, _ = run_many(solution_notebooks(only or None), out, quick=True, device="cpu", jobs=NOTEBOOK_JOBS,
                           pool=pool)
    return {run.name: (run, out / "records" / f"{run.name}.jsonl", out) for run in runs}


@pytest.fixture(scope="session")
def quick_runs():
    """Every solution notebook executed ONCE per session in QUICK mode on the CPU:
    {id: (NotebookRun, its records file, the output folder)}."""
    return QuickRuns(BACKGROUND["quick_runs"].result())


class QuickRuns(dict):
    """The session's QUICK runs; a notebook left out by COURSE_TEST_NOTEBOOKS skips its tests."""

    def __missing__(self, name):
        pytest.skip(f"{name} was not run: COURSE_TEST_NOTEBOOKS={os.environ.get('COURSE_TEST_NOTEBOOKS')!r}")


def _graded_batch(course_dir: Path) -> SimpleNamespace:
    from grader import cli
    from grader.autograde import autograde
    from submissions import AID, LIMITS, hash_tree, repo_state, write_adversarial

    assert cli.main(["samples", "--course-dir", str(course_dir)]) == 0
    # Each "correct" sample is the very notebook the grader checks as the assignment's reference
    # solution before the batch (full marks, or the assignment is refused): one copy is graded as a student.
    for folder in (course_dir / "submitted").glob("sample_correct/*"):
        if folder.name != AID:
            shutil.rmtree(folder)
    (course_dir / "submitted" / "stray" / "99_not_an_assignment").mkdir(parents=True)
    (course_dir / "submitted" / "empty_handed" / AID).mkdir(parents=True)
    write_adversarial(course_dir)
    others_before, repo_before = hash_tree(course_dir / "submitted"), repo_state()
    lines = []
    outcomes = autograde(course_dir, workers=2, report=lines.append, limits=LIMITS)
    graded_at = time.monotonic()
    assert cli.main(["feedback", "--course-dir", str(course_dir), "--assignment", AID]) == 0
    time.sleep(max(0.0, graded_at + 5 - time.monotonic()))  # give the delayed writers among the cheats their chance
    return SimpleNamespace(dir=course_dir, outcomes={(o.student, o.assignment): o for o in outcomes}, lines=lines,
                           others_before=others_before, repo_before=repo_before,
                           feedback_pages=set((course_dir / "feedback").glob("*/*/*.html")))


# fixture -> (its background job, the job's nice), in the order they run
JOBS = {"quick_runs": (_quick_runs, 0), "graded_course": (_graded_batch, 10)}


@pytest.fixture(scope="session")
def graded_course():
    """ONE graded batch per session: every bundled sample of every assignment, a stray folder, an
    empty one, and every adversarial submission (tests/submissions.py)."""
    return BACKGROUND["graded_course"].result()


@pytest.fixture(scope="session")
def feedback_pages(graded_course):
    """nbgrader feedback for the batch's 03_building_models submissions (the cheats among them),
    generated once, in the batch's background job."""
    return graded_course.feedback_pages


CHROMIUM = shutil.which("chromium-headless-shell")


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium headless shell driven by Playwright (no browser download), for the browser tests."""
    if CHROMIUM is None:
        if os.geteuid() == 0:  # `make env` (system-tools) installs it when run as root
            pytest.fail("chromium-headless-shell is not installed: run `make system-tools` (Debian's package)")
        pytest.skip("chromium-headless-shell is not installed and this user cannot install it: "
                    "sudo apt-get install chromium-headless-shell")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM)
        yield chromium
        chromium.close()
