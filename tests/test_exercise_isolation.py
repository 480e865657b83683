"""One exercise's hang or crash costs that exercise alone, messages never blame the student for the
grader's doing, and feedback leads with the verdicts.

Real 02_tensor_toolbox submissions, graded in ONE batch: every one has the reference
``pairwise_sq_distances`` (6 points) and a ``one_hot`` (6 points) that hangs, crashes, does not
parse or misses a helper; each one's progress line says why it lost points. The batch's short limits (``LIMITS``) make a hang cost one cell deadline, well within
the wall clock: every run must still finish (no note that the whole notebook ran out of
time) and give ``pairwise_sq_distances`` its full points.
"""
import io
import struct

import nbformat
import pytest
import torch

from grader import course, grading, sandbox
from grader.checking import Evidence, defined_names, explain
from grader.autograde import autograde
from grader.sample_submissions import fill, solution_answers
from submissions import prepared_release, submit

AID = "02_tensor_toolbox"
# Shorter deadlines than the adversarial batch's: every hang here costs several probe deadlines, and
# 02's honest code (the reference solution's included) needs well under a second per cell.
LIMITS = sandbox.Limits(wall_s=90, cell_s=5)
STOPPED = f"the grader stopped your code after {LIMITS.cell_s} s"
ONE_HOT_TESTS = ("test_one_hot_values", "test_one_hot_range", "test_one_hot_no_builtin")
SCATTER = ("    out = torch.zeros(len(labels), num_classes, dtype=torch.int64, device=labels.device)\n"
           "    return out.scatter_(1, labels.unsqueeze(1), 1)\n")

# student -> (one_hot answer cell, what every one_hot test's message must say)
BROKEN_ONE_HOT = {
    "endless_loop": ("def one_hot(labels, num_classes):\n    while True:\n        pass\n",
                     STOPPED),
    # idle, not spinning: the deadline is the same, and the CPU stays free for the other worker
    "swallows_the_deadline": ("import time\ndef one_hot(labels, num_classes):\n    while True:\n        try:\n"
                              "            while True:\n                time.sleep(1)\n        except BaseException:\n"
                              "            pass\n", STOPPED),
    # a hang in the answer cell itself that catches what it can: TimeoutError is an OSError, which
    # `except Exception` (or glob over an unreadable tree) swallows; the deadline must still stop the cell
    "cell_swallows_oserror": ("import time\nwhile True:\n    try:\n        time.sleep(1)\n    except Exception:\n"
                              "        pass\ndef one_hot(labels, num_classes):\n" + SCATTER,
                              f"the answer cell 'one_hot' failed: DeadlineExceeded: the grader stopped it after "
                              f"{LIMITS.cell_s} s"),
    "exits": ("import os\ndef one_hot(labels, num_classes):\n    os._exit(3)\n", "exit code 3"),
    "kills_itself": ("import os, signal\ndef one_hot(labels, num_classes):\n    os.kill(os.getpid(), signal.SIGKILL)\n",
                     "was killed (SIGKILL)"),
    "segfaults": ("import ctypes\ndef one_hot(labels, num_classes):\n    return ctypes.string_at(0)\n",
                  "crashed (SIGSEGV)"),
    "helper_elsewhere": ("def one_hot(labels, num_classes):\n    return scatter_rows(labels, num_classes)\n",
                         "scatter_rows is defined in a cell that the grader does not run"),
    "syntax_error": ("def one_hot(labels, num_classes)\n    return labels\n",
                     "the answer cell 'one_hot' failed: SyntaxError"),
}
# student -> what autograde's progress line says after the score (grading.reason)
WHY = {"endless_loop": f"3 tests stopped at the {LIMITS.cell_s} s deadline",
       "swallows_the_deadline": f"3 tests stopped at the {LIMITS.cell_s} s deadline",
       "syntax_error": "SyntaxError in the answer cell one_hot",
       "cell_swallows_oserror": f"the answer cell one_hot stopped at the {LIMITS.cell_s} s deadline",
       "segfaults": "3 tests not passed, e.g. test_one_hot_values: one_hot: your code's process crashed (SIGSEGV)"}


def _helper_in_a_lesson_cell(nb):
    """The helper goes in a new cell right before the answer cell: the grader never runs it."""
    index = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "one_hot")
    nb.cells.insert(index, nbformat.v4.new_code_cell("def scatter_rows(labels, num_classes):\n" + SCATTER))


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    course_dir = tmp_path_factory.mktemp("isolation")
    release = prepared_release(course_dir, AID)
    pairwise = {"pairwise_sq_distances": solution_answers(course.find(AID))["pairwise_sq_distances"]}
    students = {name: {"one_hot": code} for name, (code, _) in BROKEN_ONE_HOT.items()}
    students["no_range_check"] = {"one_hot": "def one_hot(labels, num_classes):\n" + SCATTER}
    for student, answers in students.items():
        nb = fill(release, {**answers, **pairwise})
        if student == "helper_elsewhere":
            _helper_in_a_lesson_cell(nb)
        submit(course_dir, student, AID, nb)
    outcomes = {o.student: o for o in autograde(course_dir, AID, workers=2, report=lambda _: None, limits=LIMITS)}
    return course_dir, outcomes


def _verdicts(course_dir, student) -> dict[str, str]:
    """test id -> the grader's verdict, as the autograded notebook shows it."""
    nb = nbformat.read(course_dir / "autograded" / student / AID / f"{AID}.ipynb", as_version=4)
    return {c.metadata.nbgrader["grade_id"]: "".join(o.text for o in c.outputs)
            for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")}


@pytest.mark.parametrize("student", BROKEN_ONE_HOT)
def test_a_hang_or_crash_in_one_exercise_costs_only_its_points(batch, student):
    course_dir, outcomes = batch
    outcome = outcomes[student]
    assert outcome.error is None and outcome.note == "", outcome.line()  # the run itself finished: no wall-clock stop
    assert outcome.score == 6 and outcome.max_score == 12, outcome.line()
    verdicts = _verdicts(course_dir, student)
    for test, verdict in verdicts.items():
        if test in ONE_HOT_TESTS:
            assert "not passed" in verdict and BROKEN_ONE_HOT[student][1] in verdict, (test, verdict)
        else:
            assert verdict == "Grader: passed\n", (test, verdict)


@pytest.mark.parametrize("student", WHY)
def test_the_progress_line_says_why_points_were_lost(batch, student):
    line = batch[1][student].line()
    assert f"{student} {AID}: 6 / 12 in " in line and f" s: {WHY[student]}" in line, line


def test_a_wrong_exception_is_named_with_its_message(batch):
    course_dir, outcomes = batch
    assert outcomes["no_range_check"].score == 10, outcomes["no_range_check"].line()
    verdict = _verdicts(course_dir, "no_range_check")["test_one_hot_range"]
    assert "raised RuntimeError: index" in verdict and "out of bounds" in verdict and "expected a ValueError" in verdict


def test_feedback_leads_with_the_verdicts_and_keeps_every_tracked_cell(batch):
    course_dir, _ = batch
    release = nbformat.read(course_dir / "release" / AID / f"{AID}.ipynb", as_version=4)
    nb = nbformat.read(course_dir / "autograded" / "endless_loop" / AID / f"{AID}.ipynb", as_version=4)
    summary = nb.cells[0]
    assert summary.cell_type == "markdown" and "nbgrader" not in summary.metadata
    assert "`test_one_hot_values` (0 / 3 point(s)): **not passed**: one\\_hot: the grader stopped" in summary.source
    assert "`test_pairwise_sq_distances_far` (2 / 2 point(s)): **passed**" in summary.source
    tracked = {c.metadata.nbgrader["grade_id"]: c for c in release.cells if c.metadata.get("nbgrader")}
    kept = {c.metadata.nbgrader["grade_id"]: c for c in nb.cells if c.metadata.get("nbgrader")}
    assert kept.keys() == tracked.keys()
    assert all(kept[g].metadata == tracked[g].metadata for g in tracked)  # nbgrader's checksums and points included
    text = "".join(c.source for c in nb.cells)
    assert "### Exercise 1" in text and "## T021" not in text  # the exercises' prompts stay, the lesson goes
    assert course.nbgrader_api(course_dir).generate_feedback(AID, "endless_loop")["success"]
    page = (course_dir / "feedback" / "endless_loop" / AID / f"{AID}.html").read_text()
    assert page.index("Feedback: 02_tensor_toolbox") < page.index("code_cell")  # before the first code cell
    manual = _formgrader_page(course_dir / "autograded" / "endless_loop" / AID / f"{AID}.ipynb")
    for grade_id, cell in tracked.items():  # a score box for every test, a comment box for every answer
        meta = cell.metadata.nbgrader
        assert (f'id="{grade_id}"' in manual) == bool(meta.get("grade")), grade_id
        assert (f'id="{grade_id}-comment"' in manual) == bool(meta.get("solution")), grade_id


def _formgrader_page(notebook) -> str:
    """The page formgrader's manual grading shows for a submission (its own exporter and template)."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers
    from traitlets.config import Config

    config = Config()
    config.HTMLExporter.template_name = "formgrade"
    config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    resources = {"assignment_id": AID, "notebook_id": AID, "submission_id": "s", "index": 0, "total": 1,
                 "base_url": "", "student": "s", "last_name": None, "first_name": None, "notebook_path": ""}
    return HTMLExporter(config=config).from_filename(str(notebook), resources=resources)[0]


def _run(returncode, timed_out=False, truncated=False):
    """A run that got past the course's setup code and then ended early."""
    frame = io.BytesIO()
    torch.save({"kind": "setup_done", "name": "", "data": None}, frame)
    output = struct.pack(">I", len(frame.getvalue())) + frame.getvalue()
    return sandbox.RunResult(returncode, timed_out, output, truncated, "", 1.0)


@pytest.mark.parametrize("returncode, timed_out, words", [
    (137, False, "was killed (SIGKILL)"),   # bubblewrap reports its child's signal as 128 + n
    (139, False, "crashed (SIGSEGV)"),
    (None, True, f"the grader stopped your code after {LIMITS.wall_s:.0f} s"),
    (3, False, "exit code 3"),
])
def test_an_early_end_is_worded_plainly(returncode, timed_out, words):
    evidence = grading.parse(_run(returncode, timed_out), LIMITS)
    assert evidence.environment is None and words in evidence.failure and "137" not in evidence.failure


def test_a_sandbox_killed_from_outside_is_the_environments_fault():
    evidence = grading.parse(_run(-15), LIMITS)
    assert "killed from outside by SIGTERM" in evidence.environment


def test_a_missing_name_is_traced_to_a_failed_cell_and_a_cell_the_grader_skips():
    evidence = Evidence(cells={"one_hot": {"ok": False, "error": "NameError: name 'np' is not defined", "output": ""},
                               "other": {"ok": True, "error": None, "output": ""}}, elsewhere=frozenset({"np", "x"}))
    message = explain("one_hot: your code raised NameError: one_hot is not defined: did the answer cell run "
                      "without errors?", evidence)
    assert "(the answer cell 'one_hot' failed: NameError: name 'np' is not defined)" in message
    assert message.endswith("np is defined in a cell that the grader does not run (it runs only the answer cells): "
                            "keep it, like any helper, in the answer cell")
    assert explain("values differ", evidence) == "values differ"


def test_only_a_cells_top_level_names_count_as_defined_there():
    source = ("%matplotlib inline\nimport numpy as np\nfrom a.b import c as d\nimport os.path\nx, (y, z) = 1, (2, 3)\n"
              "for i in range(3):\n    pass\ndef f(q):\n    local = 1\nclass K:\n    attr = 1\n[w for w in range(3)]\n")
    assert defined_names(source) == {"np", "d", "os", "x", "y", "z", "i", "f", "K"}
    assert defined_names("def broken(:\n") == set()
