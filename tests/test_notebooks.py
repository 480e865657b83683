"""Notebook hygiene: clean commits, a fresh notebooks/, the conventions every notebook follows."""
import filecmp
import re
import subprocess
from pathlib import Path

import nbformat
import pytest

from grader import course
from utils.paths import REPO_ROOT

REPO = REPO_ROOT
CURRICULUM = REPO.parent / "shared" / "CURRICULUM.md"
# Tips each notebook must teach (CURRICULUM.md): every tip T001-T106 belongs to one notebook.
EXPECTED_TIPS = {
    "00_measure_first": [f"T{n:03d}" for n in range(1, 12)],
    "01_tensors_devices": [f"T{n:03d}" for n in range(12, 21)],
    "02_tensor_toolbox": [f"T{n:03d}" for n in range(21, 38)],
    "03_building_models": [f"T{n:03d}" for n in range(38, 54)],
    "04_training_loop": [f"T{n:03d}" for n in range(54, 71)],
    "05_memory": [f"T{n:03d}" for n in range(71, 78)],
    "06_data_pipeline": [f"T{n:03d}" for n in range(78, 86)],
    "07_speed_knobs": [f"T{n:03d}" for n in range(86, 92)],
    "08_compile_fuse": ["T092", "T093"],
    "09_profiling": ["T094"],
    "10_distributed": [f"T{n:03d}" for n in range(95, 102)],
    "11_inference": [f"T{n:03d}" for n in range(102, 107)],
}


def committed_notebooks() -> list[Path]:
    """Every notebook in the working tree that git would commit (tracked or not ignored)."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.ipynb"],
                         cwd=REPO, capture_output=True, text=True, check=True)
    return [REPO / line for line in out.stdout.splitlines() if (REPO / line).exists()]


def tags(nb) -> list[str]:
    return [t for cell in nb.cells for t in cell.metadata.get("tags", [])]


@pytest.fixture(scope="module")
def solutions():
    return {a.id: nbformat.read(a.source_dir / a.notebook_name, as_version=4) for a in course.assignments()}


def test_there_are_assignments_and_each_is_released():
    assignments = course.assignments()
    assert assignments, "solutions/ holds no assignment"
    for assignment in assignments:
        assert assignment.release_path.is_file(), f"run `make notebooks`: {assignment.release_path} is missing"


@pytest.mark.parametrize("path", committed_notebooks(), ids=lambda p: str(p.relative_to(REPO)))
def test_committed_notebooks_have_no_outputs(path):
    nb = nbformat.read(path, as_version=4)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert not cell.outputs, f"{path.name} cell {index} has outputs: clear them before committing"
            assert cell.execution_count is None, f"{path.name} cell {index} has an execution count"


def test_released_notebooks_are_up_to_date(tmp_path):
    course.generate_release(tmp_path)
    fresh = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    committed = sorted(p.relative_to(course.NOTEBOOKS) for p in course.NOTEBOOKS.rglob("*")
                       if p.is_file() and ".ipynb_checkpoints" not in p.parts)
    assert fresh == committed, "notebooks/ is stale: run `make notebooks`"
    for rel in fresh:
        assert filecmp.cmp(tmp_path / rel, course.NOTEBOOKS / rel, shallow=False), \
            f"notebooks/{rel} is stale: run `make notebooks`"


def test_released_notebooks_hide_solutions_and_hidden_tests():
    for assignment in course.assignments():
        text = assignment.release_path.read_text()
        assert "BEGIN HIDDEN TESTS" not in text and "BEGIN SOLUTION" not in text
        assert "raise NotImplementedError()" in text


def test_notebook_conventions(solutions):
    for name, nb in solutions.items():
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert re.match(r"from utils import \w+", code[0].source), f"{name}: first code cell must import from utils"
        assert "parameters" in code[1].metadata.get("tags", []), f"{name}: second code cell must be the parameters cell"
        assert re.search(r"^QUICK = (True|False)", code[1].source, re.M), f"{name}: parameters need QUICK"
        assert re.search(r'^DEVICE = "auto"', code[1].source, re.M), f"{name}: parameters need DEVICE = \"auto\""
        assert nb.metadata.kernelspec.name == "python3"
        for tag in tags(nb):
            if tag.startswith("tip:"):
                assert re.fullmatch(r"tip:T\d{3}", tag), f"{name}: malformed tag {tag!r}"


@pytest.mark.parametrize("name,tips", EXPECTED_TIPS.items())
def test_every_planned_tip_is_tagged(solutions, name, tips):
    tagged = {t[4:] for t in tags(solutions[name]) if t.startswith("tip:")}
    assert not set(tips) - tagged, f"{name} does not tag {sorted(set(tips) - tagged)}"


@pytest.mark.skipif(not CURRICULUM.exists(), reason="the curriculum lives beside the repo (../shared)")
def test_tagged_tips_exist_in_the_curriculum(solutions):
    known = set(re.findall(r"^\| (T\d{3}) \|", CURRICULUM.read_text(), re.M))
    for name, nb in solutions.items():
        unknown = {t[4:] for t in tags(nb) if t.startswith("tip:")} - known
        assert not unknown, f"{name} tags tips missing from CURRICULUM.md: {sorted(unknown)}"


def test_graded_cells_have_points_and_unique_ids(solutions):
    for name, nb in solutions.items():
        meta = [c.metadata.get("nbgrader", {}) for c in nb.cells]
        ids = [m["grade_id"] for m in meta if m]
        assert len(ids) == len(set(ids)), f"{name}: duplicate grade ids"
        graded = [m for m in meta if m.get("grade")]
        assert graded and all(m.get("points", 0) > 0 for m in graded), f"{name}: graded cells need points"


def test_every_tip_of_the_curriculum_has_a_notebook():
    planned = [tip for tips in EXPECTED_TIPS.values() for tip in tips]
    assert sorted(planned) == [f"T{n:03d}" for n in range(1, 107)]
    assert set(EXPECTED_TIPS) == {a.id for a in course.assignments()}


def test_no_figure_depends_on_the_plot_backend(solutions):
    """plt.show() shows nothing under a non-interactive backend (a headless GPU host, MPLBACKEND=Agg):
    the H100 run lost 09's phase charts that way. Figures go through utils.plots.Shown."""
    for name, nb in solutions.items():
        shown = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and re.search(r"\bplt\.show\(", c.source)]
        assert not shown, f"{name}: cells {shown} call plt.show(); display plots.Shown(fig, kind) instead"
