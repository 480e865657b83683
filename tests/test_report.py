import re

import pytest
import torch

from utils import bench, references
from utils.execute import workers
from utils.report import NotebookRun, build_report, slowest_cells

pytestmark = pytest.mark.busy  # cards drawn by worker processes


@pytest.fixture(autouse=True)
def no_reference_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(references, "REFERENCES", tmp_path / "no-references")
    references._load_runs.cache_clear()
    yield
    references._load_runs.cache_clear()


def test_report_shows_every_comparison_with_table_and_plot(quick_bench, records_file, tmp_path):
    x = torch.rand(64, 64)
    bench.compare("T913", ("slow", lambda: x @ x @ x), ("fast", lambda: x @ x),
                  options=bench.Options(title="first", sizes={"N": 64}))
    bench.compare("T944", ("a", lambda: x + 1, {"parameters": 5}), ("b", lambda: x * 2),
                  options=bench.Options(title="second"))
    executed = tmp_path / "executed" / "03_x.html"
    executed.parent.mkdir()
    executed.write_text("<html></html>")
    runs = [NotebookRun("03_x", 12.3, True, executed), NotebookRun("04_y", 1.0, False, None, "boom <err>")]

    page = build_report(records_file, tmp_path / "report.html", runs).read_text()

    assert "Measurements (2)" in page
    assert page.count('src="data:image/png;base64,') == 2
    assert page.index('id="T913"') < page.index('id="T944"')
    assert "first" in page and "second" in page and "parameters" in page
    assert 'href="executed/03_x.html"' in page and "12.3 s" in page
    assert "FAILED" in page and "boom &lt;err&gt;" in page
    assert torch.__version__ in page  # the environment table


def test_cards_drawn_by_worker_processes_are_the_cards_drawn_in_order(quick_bench, records_file, tmp_path):
    x = torch.rand(64, 64)
    bench.compare("T913", ("slow", lambda: x @ x @ x), ("fast", lambda: x @ x), options=bench.Options(title="first"))
    bench.compare("T944", ("a", lambda: x + 1), ("b", lambda: x * 2), options=bench.Options(title="second"))
    in_order = build_report(records_file, tmp_path / "a.html").read_text()
    with workers() as pool:
        pooled = build_report(records_file, tmp_path / "b.html", map_=pool.map).read_text()
    assert pooled.count('src="data:image/png;base64,') == 2
    assert pooled.index('id="T913"') < pooled.index('id="T944"')
    generated = re.compile(r"Generated [0-9-]+ [0-9:]+")
    assert generated.sub("", pooled) == generated.sub("", in_order)


def test_report_without_records_says_so(tmp_path):
    page = build_report(tmp_path / "none.jsonl", tmp_path / "r.html").read_text()
    assert "No measurements were recorded" in page


def test_the_slowest_cells_of_a_run_are_listed_slowest_first(tmp_path):
    import nbformat

    def executed(name, durations):
        nb = nbformat.v4.new_notebook()
        for k, seconds in enumerate(durations):
            cell = nbformat.v4.new_code_cell(f"\n# cell {k} of {name}\nx = {k}")
            if seconds is not None:
                cell.metadata["papermill"] = {"duration": seconds}
            nb.cells.append(cell)
        nb.cells.append(nbformat.v4.new_markdown_cell("prose"))
        path = tmp_path / f"{name}.ipynb"
        nbformat.write(nb, path)
        return path

    paths = [executed("01_a", [0.5, 9.25, None]), executed("02_b", [3.0, 12.0]), tmp_path / "missing.ipynb"]
    rows = slowest_cells(paths, n=3)
    assert rows == [{"seconds": "12.0", "notebook": "02_b", "cell": "1", "first line": "# cell 1 of 02_b"},
                    {"seconds": "9.2", "notebook": "01_a", "cell": "1", "first line": "# cell 1 of 01_a"},
                    {"seconds": "3.0", "notebook": "02_b", "cell": "0", "first line": "# cell 0 of 02_b"}]
    page = build_report(tmp_path / "none.jsonl", tmp_path / "r.html", slowest=rows).read_text()
    assert "The slowest cells of the run" in page and "<td>02_b</td>" in page
