"""The course in a real browser: Playwright drives Debian's Chromium headless shell (`make system-tools` installs
it; no `playwright install`, no downloaded browser) against a `jupyter lab` started here.

Learner: run a released notebook from JupyterLab's menu, then answer an exercise right and wrong.
Instructor: grade a class with `python -m grader`, then check what nbgrader's formgrader shows.
On a failure every open page is saved as a PNG in the test's tmp dir.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

from submissions import interpreter_env
from utils.distributed import free_port

pytestmark = pytest.mark.busy  # Chromium, JupyterLab and a kernel, and a class graded meanwhile

REPO = Path(__file__).resolve().parent.parent
TOKEN = "course-browser-test"
ACTIVE = "#jp-main-dock-panel .jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook"  # the notebook in front
STDERR = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'  # errors and warnings
# The released notebook whose cells before the first exercise run fastest on a CPU in QUICK mode
# (03: 12 s; 00: 16 s, 02: 25 s, 01: 38 s, 04: 80 s, measured on 2 shared cores).
LEARNER_NB = "03_building_models"
# The assignment with the fewest bundled samples, graded while the learner tests run.
GRADED = "01_tensors_devices"
RUN_TIMEOUT_MS = 180_000
PROGRESS_CELL = "from tqdm.auto import tqdm\nfor _ in tqdm(range(50), desc='epoch 1/1'):\n    pass"


# ---------------------------------------------------------------- servers and browser

def _write_lab_settings(folder: Path) -> None:
    """JupyterLab's user settings: the defaults, without news or update checks (no network here)."""
    path = folder / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}), encoding="utf-8")


def _course_env() -> dict[str, str]:
    """This environment's bin/ first on PATH (nbgrader runs `alembic` by name), this checkout first
    on PYTHONPATH (the notebooks and the grader import `utils` and `grader` from it)."""
    return {**interpreter_env(), "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}


@contextlib.contextmanager
def jupyter_lab(root: Path, cwd: Path, scratch: Path):
    """`jupyter lab` from this interpreter's environment, rooted at ``root`` and run in ``cwd``;
    yields its URL and stops it, with its kernels, on exit. Kernels import ``utils`` from this
    checkout."""
    port = free_port()
    _write_lab_settings(scratch / "lab-settings")
    env = {**_course_env(), "JUPYTER_CONFIG_DIR": str(scratch / "jupyter-config"),
           "JUPYTER_RUNTIME_DIR": str(scratch / "runtime")}
    log_path = scratch / "jupyter.log"
    command = [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1",
               f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={TOKEN}",
               f"--ServerApp.root_dir={root}", f"--LabApp.user_settings_dir={scratch / 'lab-settings'}",
               f"--LabApp.workspaces_dir={scratch / 'workspaces'}"]
    with open(log_path, "wb") as log:
        server = subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(server, f"{url}/api/status?token={TOKEN}", log_path)
        yield url
    finally:
        server.send_signal(signal.SIGTERM)  # jupyter_server shuts its kernels down on SIGTERM
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def _wait_until_up(server: subprocess.Popen, status_url: str, log_path: Path, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with {server.returncode}:\n{log_path.read_text()[-3000:]}")
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(status_url, timeout=2):
                return
        time.sleep(0.3)
    raise RuntimeError(f"jupyter lab did not answer within {timeout:.0f} s:\n{log_path.read_text()[-3000:]}")


def _new_page(browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(60_000)  # JupyterLab loads slowly on 2 busy cores
    return page


def _screenshots(browser, folder: Path) -> None:
    pages = [page for context in browser.contexts for page in context.pages]
    for i, page in enumerate(pages):
        with contextlib.suppress(Exception):
            page.screenshot(path=folder / f"page{i}.png", full_page=True)
    print(f"screenshots of {len(pages)} open page(s) in {folder}")


@contextlib.contextmanager
def _screenshots_on_error(browser, folder: Path):
    """For the module fixtures' setup, which runs before the per-test fixture below exists."""
    try:
        yield
    except BaseException:
        _screenshots(browser, folder)
        raise


@pytest.fixture(autouse=True)
def screenshot_on_failure(request, browser, tmp_path):
    failed_before = request.session.testsfailed
    yield
    if request.session.testsfailed > failed_before:  # this test failed
        _screenshots(browser, tmp_path)


# ---------------------------------------------------------------- JupyterLab helpers

def _nbgrader(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def _cells(page):
    """The cells of the notebook in the current tab."""
    return page.locator(f"{ACTIVE} .jp-Cell")


def _prompt_number_of(prompt: str) -> int | None:
    """The execution count in a prompt such as '[12]:'; None for '[ ]:' or '[*]:'."""
    match = re.search(r"\[(\d+)\]", prompt)
    return int(match[1]) if match else None


# Cells are read with textContent: JupyterLab's default (content-visibility) skips rendering
# off-screen cells, which innerText would see as empty.
def _prompt_number(cell) -> int | None:
    return _prompt_number_of(cell.locator(".jp-InputArea-prompt").text_content())


def _stderr_text(cell) -> str:
    return "\n".join(cell.locator(STDERR).all_text_contents())


def _wait_for_kernel(page) -> None:
    """Until the status bar says the kernel is idle and no cell is queued or running ([*])."""
    page.wait_for_function("""active => {
        const kernel = document.querySelector('.jp-StatusBar-TextItem[title^="Change kernel"]');
        return /\\| Idle$/.test(kernel?.textContent)
            && ![...document.querySelectorAll(active + ' .jp-InputArea-prompt')].some(p => p.textContent.includes('*'));
        }""", arg=ACTIVE, timeout=RUN_TIMEOUT_MS)


def _open_notebook(page, url: str, path: str) -> None:
    page.goto(f"{url}/lab/tree/{path}?token={TOKEN}")
    _cells(page).first.wait_for()
    _wait_for_kernel(page)


def _switch_to(page, name: str) -> None:
    """Bring the notebook tab ``name`` to the front, opening it from the file browser if needed."""
    tab = page.locator("#jp-main-dock-panel .lm-TabBar-tab", has_text=name)
    if tab.count():
        tab.first.click()
    else:
        page.locator(".jp-DirListing-item", has_text=name).dblclick()
    page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current", has_text=name).wait_for()
    _cells(page).first.wait_for()
    _wait_for_kernel(page)


def _run_all(page) -> None:
    """Run > Run All Cells, then wait until execution has stopped."""
    page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Run$")).click()
    page.locator('.lm-Menu-item[data-command="runmenu:run-all"]').click()
    page.wait_for_function(  # something has run, so the idle state below is the end of the run
        "active => [...document.querySelectorAll(active + ' .jp-InputArea-prompt')]"
        ".some(p => /\\[(\\d+|\\*)\\]/.test(p.textContent))", arg=ACTIVE)
    _wait_for_kernel(page)


def _type_and_run(page, index: int, code: str, cells_to_run: int) -> None:
    """Replace cell ``index``'s code as a learner would, then Shift+Enter through it and the
    following cells (``cells_to_run`` in all) and wait until the last one has run."""
    cells = _cells(page)
    last = cells.nth(index + cells_to_run - 1)
    prompts = cells.locator(".jp-InputArea-prompt").all_text_contents()
    before = max(filter(None, map(_prompt_number_of, prompts)), default=0)
    cells.nth(index).locator(".cm-content").click()
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.insert_text(code)  # as a paste: no auto-indent, no closing brackets added
    for _ in range(cells_to_run):
        page.keyboard.press("Shift+Enter")
    page.wait_for_function("""([cell, before]) => {
        const m = cell.querySelector('.jp-InputArea-prompt').textContent.match(/\\[(\\d+)\\]/);
        return m && Number(m[1]) > before; }""", arg=[last.element_handle(), before], timeout=RUN_TIMEOUT_MS)
    _wait_for_kernel(page)


# ---------------------------------------------------------------- the server both roles use

def _grade_in_background(course_dir: Path) -> concurrent.futures.Future:
    """`python -m grader samples`, then `autograde`, for GRADED in ``course_dir``, in a thread:
    the learner's tests run meanwhile. The result: each command's CompletedProcess."""
    def grade():
        done = []
        for command in (["samples", "--course-dir", str(course_dir), "--assignment", GRADED],
                        ["autograde", "--course-dir", str(course_dir), "--assignment", GRADED, "--workers", "2"]):
            done.append(subprocess.run([sys.executable, "-m", "grader", *command], cwd=REPO, env=_course_env(),
                                       capture_output=True, text=True))
            if done[-1].returncode:
                break
        return done

    pool = concurrent.futures.ThreadPoolExecutor(1)
    future = pool.submit(grade)
    pool.shutdown(wait=False)  # returns at once; the thread ends with the grading
    return future


@pytest.fixture(scope="module")
def site(request, tmp_path_factory):
    """ONE `jupyter lab` for both roles, rooted at a temp dir holding learner/ (a released notebook)
    and course/ (an nbgrader course dir, graded in the background meanwhile when an instructor test
    is selected). It runs in course/, where formgrader reads the nbgrader_config.py that
    `python -m grader` writes."""
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    root = tmp_path_factory.mktemp("site")
    learner_dir, course_dir = root / "learner", root / "course"
    learner_dir.mkdir()
    course_dir.mkdir()
    graded = None
    if any("instructor" in item.fixturenames for item in request.session.items
           if getattr(item, "module", None) is request.module):
        graded = _grade_in_background(course_dir)
    nb = load_notebook_node(str(REPO / "notebooks" / LEARNER_NB / f"{LEARNER_NB}.ipynb"))
    # The learner's default is QUICK = False (full sizes, minutes on a CPU). Papermill's own
    # injection, as `make run` and CI use it: a cell after the parameters cell sets QUICK = True.
    nb = parameterize_notebook(nb, {"QUICK": True})
    nbformat.write(nb, learner_dir / f"{LEARNER_NB}.ipynb")
    progress = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(PROGRESS_CELL)])
    progress.metadata.kernelspec = nb.metadata.kernelspec
    nbformat.write(progress, learner_dir / "progress.ipynb")
    try:
        with jupyter_lab(root, course_dir, tmp_path_factory.mktemp("server")) as url:
            yield SimpleNamespace(url=url, root=root, learner_dir=learner_dir, nb=nb, course_dir=course_dir,
                                  graded=graded)
    finally:
        if graded is not None:
            graded.result()  # never leave the grader running past the module


# ---------------------------------------------------------------- learner

@pytest.fixture(scope="module")
def learner(site, browser):
    """The released notebook in JupyterLab, after Run > Run All Cells."""
    page = _new_page(browser)
    with _screenshots_on_error(browser, site.root):
        _open_notebook(page, site.url, f"learner/{LEARNER_NB}.ipynb")
        _run_all(page)
    yield SimpleNamespace(page=page, nb=site.nb)
    page.close()


def _first_exercise(nb) -> tuple[int, str, int]:
    """(index of the first answer cell, its grade id, number of test cells right after it)."""
    index = next(i for i, c in enumerate(nb.cells) if _nbgrader(c).get("solution") and c.cell_type == "code")
    tests = 0
    while index + 1 + tests < len(nb.cells) and _nbgrader(nb.cells[index + 1 + tests]).get("grade"):
        tests += 1
    return index, _nbgrader(nb.cells[index])["grade_id"], tests


def test_run_all_runs_every_lesson_cell_and_stops_at_the_first_exercise(learner):
    """Every cell before the first exercise ran with nothing on stderr (no error, no warning such
    as tqdm's 'IProgress not found'); the run stopped at the released answer stub, which raises
    NotImplementedError."""
    _switch_to(learner.page, f"{LEARNER_NB}.ipynb")
    cells = _cells(learner.page)
    assert cells.count() == len(learner.nb.cells), "JupyterLab shows another number of cells than the notebook has"
    first, _, _ = _first_exercise(learner.nb)
    problems = []
    for i, source in enumerate(learner.nb.cells[:first]):
        if source.cell_type != "code":
            continue
        if _prompt_number(cells.nth(i)) is None:
            problems.append(f"cell {i} did not run")
        if stderr := _stderr_text(cells.nth(i)):
            problems.append(f"cell {i} wrote to stderr:\n{stderr[-1500:]}")
    assert not problems, "\n".join(problems)
    assert "NotImplementedError" in _stderr_text(cells.nth(first))


def test_a_correct_answer_passes_the_visible_tests(learner):
    from grader import course
    from grader.sample_submissions import solution_answers

    _switch_to(learner.page, f"{LEARNER_NB}.ipynb")
    index, grade_id, tests = _first_exercise(learner.nb)
    answer = solution_answers(course.find(LEARNER_NB))[grade_id]  # between BEGIN and END SOLUTION
    _type_and_run(learner.page, index, answer, 1 + tests)
    cells = _cells(learner.page)
    for i in range(index, index + 1 + tests):
        assert _prompt_number(cells.nth(i)) is not None, f"cell {i} did not run"
        assert not _stderr_text(cells.nth(i)), f"cell {i} failed:\n{_stderr_text(cells.nth(i))}"


def test_a_wrong_answer_shows_the_failed_assertion(learner):
    """The bundled `plain_list` sample keeps the hidden layers in a Python list: the first
    visible test says so."""
    _switch_to(learner.page, f"{LEARNER_NB}.ipynb")
    index, grade_id, tests = _first_exercise(learner.nb)
    wrong = (REPO / "grader" / "assignments" / LEARNER_NB / "samples" / "plain_list" / f"{grade_id}.py").read_text(encoding="utf-8")
    _type_and_run(learner.page, index, wrong, 2)
    cells = _cells(learner.page)
    assert not _stderr_text(cells.nth(index)), "the wrong answer itself should run"
    shown = cells.nth(index + 1).locator(STDERR)
    assert shown.is_visible(), "the failed test's traceback is not on screen"
    assert "AssertionError" in shown.inner_text() and "is every layer registered" in shown.inner_text(), \
        shown.inner_text()


def test_tqdm_bars_are_widgets(learner):
    """`tqdm.auto` (the progress bars of 04's training loop) renders as an ipywidgets progress bar in
    JupyterLab, without the 'IProgress not found' warning of a missing ipywidgets."""
    page = learner.page
    _switch_to(page, "progress.ipynb")  # opened from JupyterLab's file browser
    _run_all(page)
    output = _cells(page).first.locator(".jp-OutputArea-output")
    output.locator(".jupyter-widgets.widget-hprogress .progress-bar").wait_for()
    assert "50/50" in output.inner_text()
    assert "IProgress not found" not in output.inner_text()
    assert not _stderr_text(_cells(page).first), _stderr_text(_cells(page).first)


# ---------------------------------------------------------------- instructor

@pytest.fixture(scope="module")
def instructor(site, browser):
    """The course dir graded by `python -m grader`, seen in nbgrader's formgrader."""
    for done in site.graded.result():
        assert done.returncode == 0, f"{' '.join(done.args[1:])} failed:\n{done.stdout}\n{done.stderr}"
    page = _new_page(browser)
    page.goto(f"{site.url}/formgrader?token={TOKEN}")  # logs in, lands on Manage Assignments
    yield SimpleNamespace(page=page, url=site.url, dir=site.course_dir)
    page.close()


def _gradebook(course_dir: Path) -> dict[str, SimpleNamespace]:
    """student -> the submission's scores, names and grades as the gradebook has them."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}") as gb:
        found = {}
        for sub in gb.assignment_submissions(GRADED):
            notebook = gb.find_submission_notebook(GRADED, GRADED, sub.student.id)
            found[sub.student.id] = SimpleNamespace(
                score=sub.score, max_score=sub.max_score, name=f"{sub.student.last_name}, {sub.student.first_name}",
                notebook_id=notebook.id, auto_scores={g.name: g.auto_score for g in notebook.grades})
        return found


def _shown(value: float) -> str:
    """A score as formgrader's JavaScript prints it (rounded to 2 places, no trailing zeros)."""
    return f"{round(value, 2):g}"


def _submissions_table(page, url: str) -> dict[str, dict[str, str]]:
    """Manage Submissions for the graded assignment: student id -> {column: text}."""
    page.goto(f"{url}/formgrader/manage_submissions/{GRADED}")
    page.wait_for_selector("#main-table td.student-id:not(:empty)")
    rows = {}
    for row in page.locator("#main-table tr").all():
        cols = {c: row.locator(f"td.{c}").inner_text().strip() for c in ("student-name", "status", "score")}
        rows[row.locator("td.student-id").inner_text().strip()] = cols
    return rows


def _row(page, student: str):
    return page.locator("#main-table tr", has=page.locator("td.student-id", has_text=student))


def test_formgrader_lists_every_sample_with_the_graders_score(instructor):
    from grader import course
    from grader.sample_submissions import sample_answers

    rows = _submissions_table(instructor.page, instructor.url)
    graded = _gradebook(instructor.dir)
    assert set(rows) == {f"sample_{name}" for name in sample_answers(course.find(GRADED))}
    assert {s: r["score"] for s, r in rows.items()} == \
        {s: f"{_shown(g.score)} / {_shown(g.max_score)}" for s, g in graded.items()}
    assert {s: r["student-name"] for s, r in rows.items()} == {s: g.name for s, g in graded.items()}
    assert all(r["status"] == "graded" for r in rows.values()), rows


def test_the_autograde_button_runs_the_course_grader(instructor):
    """Intended (grader/formgrader.py): formgrader's per-student Autograde regrades with the course
    grader (sandbox, hidden checks), never with nbgrader's own autograde, which would run the whole
    notebook unsandboxed in the server and score the visible tests only."""
    config = (instructor.dir / "nbgrader_config.py").read_text(encoding="utf-8")
    assert "grader.formgrader" in config, \
        "the course's nbgrader_config.py leaves formgrader's Autograde to nbgrader's unsandboxed autograde"
    student = "sample_shallow"
    before = _gradebook(instructor.dir)[student]
    autograded = instructor.dir / "autograded" / student / GRADED / f"{GRADED}.ipynb"
    written = autograded.stat().st_mtime_ns
    page = instructor.page
    _submissions_table(page, instructor.url)
    _row(page, student).locator("td.autograde a").click()
    page.locator(".modal", has_text="Successfully autograded").wait_for(timeout=RUN_TIMEOUT_MS)
    assert autograded.stat().st_mtime_ns != written, "the submission was not graded again"
    assert "Grader: not passed" in autograded.read_text(encoding="utf-8")  # the course grader's notebook
    assert _gradebook(instructor.dir)[student].score == before.score


def test_manage_assignments_has_a_working_exchange(instructor):
    """Intended: the course's nbgrader_config.py gives formgrader a course id and an exchange the
    instructor owns, so Release and Collect work (no warning on Manage Assignments)."""
    page = instructor.page
    page.goto(f"{instructor.url}/formgrader/manage_assignments")
    page.locator("#main-table td", has_text=GRADED).first.wait_for()
    warnings = page.locator("#warning-exchange, #warning-course-id")
    assert warnings.count() == 0, warnings.all_inner_texts()


def test_manual_grading_shows_the_submission_with_its_grade_cells(instructor):
    student = "sample_shallow"
    graded = _gradebook(instructor.dir)[student]
    page = instructor.page
    page.goto(f"{instructor.url}/formgrader/gradebook/{GRADED}/{GRADED}")
    page.locator(f'#main-table a[href$="/submissions/{graded.notebook_id}"]').first.click()
    page.wait_for_url(re.compile(rf"/formgrader/submissions/{graded.notebook_id}/?$"))
    page.locator("input.score").first.wait_for()
    # Each test cell shows the autograder's score as the placeholder of its score box.
    page.wait_for_function("() => [...document.querySelectorAll('input.score')].every(i => i.placeholder !== '')")
    shown = {i.get_attribute("id"): float(i.get_attribute("placeholder")) for i in page.locator("input.score").all()}
    assert shown == graded.auto_scores
    text = page.locator("body").inner_text()
    for answer in (REPO / "grader" / "assignments" / GRADED / "samples" / "shallow").glob("*.py"):
        first_line = next(line for line in answer.read_text(encoding="utf-8").splitlines() if line.strip())
        assert first_line.strip() in text, f"the student's answer {answer.stem} is not shown"


def test_generate_feedback_from_formgrader(instructor):
    student = "sample_shallow"
    page = instructor.page
    _submissions_table(page, instructor.url)
    _row(page, student).locator("td.generate-feedback a").click()
    page.locator(".modal", has_text="Successfully generated feedback").wait_for()
    html = instructor.dir / "feedback" / student / GRADED / f"{GRADED}.html"
    assert html.is_file(), f"no feedback page at {html}"
    graded = _gradebook(instructor.dir)[student]
    assert f"{GRADED} (Score: {graded.score:.1f} / {graded.max_score:.1f})" in html.read_text(encoding="utf-8")


def test_export_matches_what_formgrader_shows(instructor, tmp_path):
    """nbgrader 0.9's formgrader has no export button (Manage Assignments, Manage Submissions and
    Manual Grading only show scores): the CSV comes from `python -m grader export` and must
    hold the scores formgrader shows."""
    from grader import cli

    rows = _submissions_table(instructor.page, instructor.url)
    out = tmp_path / "grades.csv"
    assert cli.main(["export", "--course-dir", str(instructor.dir), "--to", str(out)]) == 0
    with out.open(newline="", encoding="utf-8") as f:
        exported = {r["student_id"]: r for r in csv.DictReader(f) if r["assignment"] == GRADED}
    assert {s: f"{_shown(float(r['score']))} / {_shown(float(r['max_score']))}" for s, r in exported.items()} == \
        {s: r["score"] for s, r in rows.items()}
