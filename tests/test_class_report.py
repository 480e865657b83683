"""The class device report: `python -m grader class-report` gathers the records of
every submission the gradebook lists and writes one page by device, a learners' page and a CSV."""
import csv
import json
import shutil
import uuid
from collections import Counter
from dataclasses import asdict

import nbformat
import pytest

from grader import class_report, cli, course, pgserver
from grader.coursedir import CourseDir
from grader.sample_submissions import enroll, load_runs, write_samples
from utils import records, references
from utils.paths import REPO_ROOT

AID, OTHER = "00_measure_first", "01_tensors_devices"
H100, T4, CPU = "NVIDIA H100 80GB HBM3", "NVIDIA T4", "CPU (x86_64, 8 threads)"


def comparison(device_name: str, speedups: dict[str, float], quick=True, title="sums", base=1e-2) -> list[dict]:
    """A consistent comparison's records: a baseline of ``base`` s and each variant ``speedups[v]`` times faster."""
    device, cid = "cpu" if device_name == CPU else "cuda", uuid.uuid4().hex[:12]

    def record(variant, role, median, speedup):
        return records.Record(comparison=cid, tip="T005", title=title, variant=variant, role=role, device=device,
                              device_name=device_name, median_s=median, iqr_s=median / 20, runs=20, speedup=speedup,
                              torch="2.5.1", quick=quick, round_medians=[median] * 3)
    rows = [record("loop", "baseline", base, 1.0)] + [record(v, "variant", base / s, s) for v, s in speedups.items()]
    return [json.loads(json.dumps(asdict(r))) for r in rows]


def write_notebook(path, payloads: list[list[dict]]) -> None:
    """A notebook whose one cell displays each payload as a card's records."""
    cell = nbformat.v4.new_code_cell("cards")
    cell.outputs = [nbformat.v4.new_output("display_data", data={records.MIME: {"version": 1, "records": p}})
                    for p in payloads]
    nb = nbformat.v4.new_notebook()
    nb.cells.append(cell)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


def notebook_path(root, student, assignment=AID, tree="submitted"):
    return root / tree / student / assignment / f"{assignment}.ipynb"


# student -> the payloads of their AID notebook; "tree" puts it in autograded/
CLASS = {
    "stu_a1": [comparison(H100, {"vectorized": 2.0, "chunked": 1.5}, quick=False)],
    "stu_a2": [comparison(H100, {"vectorized": 4.0}, quick=False)],
    "stu_a3": [comparison(H100, {"vectorized": 8.0}, quick=False)],
    "stu_b1": [comparison(T4, {"vectorized": 1.5})],
    "stu_b2": [comparison(T4, {"vectorized": 2.5})],
    "stu_forger": [comparison(T4, {"vectorized": 3.0}),                                     # honest: kept
                   [{**r, "speedup": 5.0} if r["role"] == "variant" else r for r in comparison(T4, {"vectorized": 2.0})],
                   [{**r, "tip": "T999"} for r in comparison(T4, {"vectorized": 9.0})]],
    "stu_c1": [comparison(CPU, {"vectorized": 0.5}), comparison(CPU, {"=HYPERLINK(1)": 2.0}, title="formula")],
    "stu_d1": [comparison(CPU, {"vectorized": 0.25})],                                     # autograded/ only
}


def make_class(root, db_url=None) -> CourseDir:
    for student, payloads in CLASS.items():
        write_notebook(notebook_path(root, student, tree="autograded" if student == "stu_d1" else "submitted"),
                       payloads)
    notebook_path(root, "stu_broken").parent.mkdir(parents=True)
    notebook_path(root, "stu_broken").write_bytes(b"this is not JSON")
    write_notebook(notebook_path(root, "stu_a1", OTHER), [])                                  # no records
    course_dir = CourseDir(root, db_url)
    enroll(course_dir, [(s, AID) for s in [*CLASS, "stu_broken", "stu_ghost"]] + [("stu_a1", OTHER)])
    return course_dir


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    course_dir = make_class(tmp_path_factory.mktemp("class"))
    return course_dir, class_report.gather(course_dir)


def test_the_aggregates_of_a_class_on_three_devices_with_forged_and_broken_records(synthetic):
    _, subs = synthetic
    assert len(subs) == 11 and {s.tree for s in subs if s.student == "stu_d1"} == {"autograded"}
    assert class_report.rejections(subs) == Counter({"speed-up contradicts medians": 1, "unknown tip": 2,
                                                     "not a notebook": 1, class_report.MISSING: 1})
    formula, demo = class_report.demos(subs)
    assert formula.title == "formula"
    assert (demo.tip, demo.title, demo.baseline(), demo.swept()) == ("T005", "sums", "loop", [])
    assert demo.devices() == [(H100, False), (T4, True), (CPU, True)]
    spread = {d: class_report.Spread.of(demo.speedups(d)["vectorized"]) for d in demo.devices()}
    assert spread[H100, False] == class_report.Spread(3, 4.0, 3.0, 6.0, 2.0, 8.0)
    assert spread[T4, True] == class_report.Spread(3, 2.5, 2.0, 2.75, 1.5, 3.0)
    assert spread[CPU, True] == class_report.Spread(2, 0.375, 0.3125, 0.4375, 0.25, 0.5)
    assert demo.speedups((H100, False))["chunked"] == [1.5] and list(demo.speedups((T4, True))) == ["vectorized"]


def test_the_page_shows_aggregates_without_student_ids_and_the_learners_page_names_them(synthetic, tmp_path):
    _, subs = synthetic
    page, learners, table = class_report.write(subs, tmp_path)
    text = page.read_text()
    assert not [s for s in (*CLASS, "stu_broken", "stu_ghost") if s in text]
    for cells in ([H100, "full", "vectorized", "3", "4.00x", "3.00x to 6.00x", "2.00x to 8.00x"],
                  [T4, "QUICK", "vectorized", "3", "2.50x", "2.00x to 2.75x", "1.50x to 3.00x"],
                  [CPU, "QUICK", "every variant", "2", "not shown: fewer than 3 learners"],
                  [H100, "full", "chunked", "1", "not shown: fewer than 3 learners"],
                  ["GPU (cuda)", H100, "3"], ["GPU (cuda)", T4, "3"], ["CPU", CPU, "2"],
                  [AID, "5", "3", "0", "1", "1"], [OTHER, "0", "0", "0", "1", "0"],
                  ["speed-up contradicts medians", "1"], ["unknown tip", "2"], [class_report.MISSING, "1"]):
        assert "<tr>" + "".join(f"<td>{c}</td>" for c in cells) in text, cells
    assert text.count('data-plot="devices"') == 1  # "formula": stu_c1's alone, so nothing to plot
    shown = learners.read_text()
    assert all(s in shown for s in (*CLASS, "stu_broken", "stu_ghost"))
    assert "<td>stu_forger</td><td>00_measure_first</td><td>submitted</td><td>NVIDIA T4</td><td>QUICK</td><td>3</td>" in shown
    assert "<td>stu_ghost</td><td>00_measure_first</td><td>missing</td>" in shown
    rows = list(csv.DictReader(table.open()))
    assert len(rows) == 20 == sum(len(s.records) for s in subs)
    assert Counter(r["student"] for r in rows)["stu_a1"] == 3 and {r["tip"] for r in rows} == {"T005"}
    assert {r["variant"] for r in rows if r["title"] == "formula"} == {"loop", "'=HYPERLINK(1)"}  # text, not a formula


def test_a_device_model_too_few_learners_used_shows_a_count_and_no_figures(synthetic, tmp_path, capsys):
    """stu_c1 and stu_d1 alone measured on CPU: whoever knows their laptop would read their figures."""
    _, subs = synthetic
    hidden = class_report.report_page(subs)
    assert "0.38x" not in hidden and "0.25x" not in hidden and "<td>chunked</td><td>1</td><td>1.50x" not in hidden
    shown = class_report.report_page(subs, least=2)
    assert "<td>" + "</td><td>".join([CPU, "QUICK", "vectorized", "2", "0.38x", "0.31x to 0.44x", "0.25x to 0.50x"]) \
        in shown
    with pytest.raises(ValueError, match="at least 1 learner"):
        class_report.report_page(subs, least=0)
    course_dir, _ = synthetic
    assert cli.main(["class-report", "--course-dir", str(course_dir.path), "--out", str(tmp_path), "--workers", "1",
                     "--min-learners", "1"]) == 0
    assert "<td>chunked</td><td>1</td><td>1.50x</td>" in (tmp_path / class_report.PAGE).read_text()  # stu_a1's
    rows = list(csv.DictReader((tmp_path / class_report.CSV).open()))
    assert {r["student"] for r in rows if r["device_name"] == CPU} == {"stu_c1", "stu_d1"}   # the CSV keeps all
    with pytest.raises(SystemExit):
        cli.main(["class-report", "--course-dir", str(course_dir.path), "--min-learners", "0"])
    assert "is not a whole number of learners" in capsys.readouterr().err


def test_plots_are_capped_so_made_up_comparisons_cannot_flood_the_page(synthetic, monkeypatch):
    monkeypatch.setattr(class_report, "MAX_PLOTS", 0)
    text = class_report.report_page(synthetic[1])
    assert 'data-plot="devices"' not in text and "Not plotted: the page plots the 0 comparisons" in text


def test_reading_in_several_processes_gives_the_same_class(synthetic, monkeypatch):
    course_dir, subs = synthetic
    monkeypatch.setattr(class_report, "PARALLEL_FROM", 1)
    assert class_report.gather(course_dir, workers=2) == subs


def test_the_command_writes_the_report_and_refuses_bad_input_clearly(synthetic, tmp_path, capsys):
    course_dir, _ = synthetic
    assert cli.main(["class-report", "--course-dir", str(course_dir.path), "--out", str(tmp_path / "r"),
                     "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "11 submission(s), 20 record(s) accepted, left out: not a notebook 1" in out
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == ["class_records.csv", "class_report.html", "students.html"]
    assert cli.main(["class-report", "--course-dir", str(tmp_path / "nowhere")]) == 2
    assert "is not a course directory" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert cli.main(["class-report", "--course-dir", str(tmp_path / "empty")]) == 2
    assert "no gradebook" in capsys.readouterr().err
    enroll(CourseDir(tmp_path / "empty"), [])
    assert cli.main(["class-report", "--course-dir", str(tmp_path / "empty")]) == 0
    assert "0 submission(s), 0 record(s) accepted (the gradebook lists no submissions: an empty report)" in capsys.readouterr().out
    empty = (tmp_path / "empty" / "class_report" / "class_report.html").read_text()
    assert "The gradebook lists no submissions" in empty and "No submission carries measurements" in empty


def test_a_postgresql_gradebook_gives_the_same_class(synthetic, tmp_path):
    if not pgserver.INITDB:
        pytest.fail("PostgreSQL is not installed: run `make env` (it installs Debian's postgresql package)")
    _, subs = synthetic
    with pgserver.local_server() as server:
        course_dir = make_class(tmp_path, server.database("report"))
        assert class_report.gather(course_dir) == subs


def test_a_class_graded_in_two_shard_folders_is_read_from_both(synthetic, tmp_path, capsys):
    """Each shard keeps its own course directory: half the notebooks are in the other shard's."""
    course_dir, subs = synthetic
    first, second = tmp_path / "shard0", tmp_path / "shard1"
    shutil.copytree(course_dir.path, first)
    moved = ["stu_a2", "stu_b1", "stu_forger", "stu_d1"]
    for student in moved:
        for tree in class_report.TREES:
            if (first / tree / student).exists():
                shutil.move(first / tree / student, second / tree / student)
    one_shard = class_report.gather(CourseDir(first))
    assert {s.student for s in one_shard if not s.tree} == {*moved, "stu_ghost"}, "the other shard's are missing"
    both = class_report.gather(CourseDir(first), also=(second,))
    assert both == subs
    assert cli.main(["class-report", "--course-dir", str(first), "--also-from", str(second), "--workers", "1"]) == 0
    assert "11 submission(s), 20 record(s) accepted" in capsys.readouterr().out
    assert cli.main(["class-report", "--course-dir", str(first), "--also-from", str(tmp_path / "nowhere")]) == 2
    assert f"{tmp_path / 'nowhere'} is not a course directory" in capsys.readouterr().err


def test_the_bundled_runs_make_sample_submissions_from_three_devices_beside_the_references(tmp_path):
    runs = load_runs([REPO_ROOT / "grader/sample_records/cpu-quick",
                      REPO_ROOT / "grader/sample_records/h200-quick", references.REFERENCES / "h100-2026-11-25"])
    students = write_samples(tmp_path, course.find(OTHER), course.NOTEBOOKS / OTHER, runs)
    assert len(students) >= 3
    enroll(CourseDir(tmp_path), [(s, OTHER) for s in students])
    subs = class_report.gather(CourseDir(tmp_path))
    assert class_report.rejections(subs) == Counter()
    assert {r.device_name for s in subs for r in s.records} >= {"NVIDIA H200", "NVIDIA H100 80GB HBM3",
                                                                "CPU (x86_64, 2 threads)"}
    text = class_report.report_page(subs)
    assert "reference run h100-2026-11-25" in text and "claims (utils/claims.toml)" in text
    [sweep] = [d for d in class_report.demos(subs) if d.title == "copy bandwidth by transfer size"]
    assert sweep.swept() == ["MiB per copy"] and len(sweep.speedups(("NVIDIA H200", True))) == 4


def test_the_page_renders_its_tables_and_plots_in_a_browser(synthetic, browser, tmp_path):
    page_path, *_ = class_report.write(synthetic[1], tmp_path)
    page = browser.new_page()
    try:
        page.goto(page_path.as_uri())
        assert page.locator("h1").inner_text() == "The class's measurements"
        assert page.locator("table").count() == 5 and page.locator("tr").count() > 10
        plots = page.locator('img[data-plot="devices"]')
        assert plots.count() == 1 and plots.evaluate_all("all => all.every(i => i.complete && i.naturalWidth > 300)")
        assert plots.first.bounding_box()["height"] > 100
    finally:
        page.close()
