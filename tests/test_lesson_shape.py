"""benchmarks/lesson_shape.py's figures: what counts as a long cell, narration, a card's words, a plot."""
import subprocess
import sys

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from utils import lesson_shape
from utils.paths import REPO_ROOT


def test_prose_strings_count_and_names_do_not():
    source = '''bench.compare("T001", ("torch.ones on the CPU, then .to(dev) with a copy", f), ("b", g),
              title="create a tensor of ones on the device, then copy it back")
print("On a CPU every op has finished when it returns, so there is nothing to wait for.")
label = "torch.from_numpy(np.asarray(img)).permute(2, 0, 1)"
note = f"the device did {x} of work, so the two times add up here"
'''
    assert lesson_shape.sentence_lines(source) == {3, 5}


def test_magics_and_broken_code_do_not_crash_it():
    assert lesson_shape.sentence_lines("%timeit f()\n!ls\nprint('a b c d e f g')") == {3}
    assert lesson_shape.sentence_lines("def (:") == set()


def _notebook(tmp_path, cells, outputs=None):
    nb = new_notebook(cells=cells)
    path = tmp_path / "00_x.ipynb"
    nbformat.write(nb, path)
    if outputs is None:
        return path, None
    for cell, out in zip((c for c in nb.cells if c.cell_type == "code"), outputs):
        cell.outputs = out
    executed = tmp_path / "executed.ipynb"
    nbformat.write(nb, executed)
    return path, executed


def test_a_notebook_shape_counts_lesson_cells_only(tmp_path):
    long_cell = "\n".join(f"x{i} = {i}" for i in range(30))
    path, _ = _notebook(tmp_path, [new_code_cell("x = 1"), new_code_cell(long_cell), new_markdown_cell("## Exercises"),
                                   new_code_cell(long_cell)])
    shape = lesson_shape.notebook_shape(path)
    assert (shape.cells, shape.long_cells, shape.lines, shape.sentence_lines) == (2, [30], 31, 0)


def test_card_words_exclude_the_details_and_plots_are_counted_by_kind(tmp_path):
    card = ('<div class="course-card"><p><b>T001 · demo</b> · tip: 2.00x as fast</p><table><tr><td>base</td></tr>'
            '</table><details><summary>Method</summary><p>many hidden words here</p></details></div>')
    plot = '<img data-plot="sweep" src="data:image/png;base64,AAAA"/>'
    outputs = [[new_output("display_data", {"text/html": card})], [new_output("display_data", {"text/html": plot})],
               [new_output("stream", name="stdout", text="three more words")]]
    path, executed = _notebook(tmp_path, [new_code_cell("a"), new_code_cell("b"), new_code_cell("c")], outputs)
    output = lesson_shape.notebook_shape(path, executed).output
    assert output.card_words == [6]  # demo, tip, as, fast, base, Method: the summary stays visible
    assert output.plots == ["sweep"] and output.words == 9
    row = lesson_shape.rows([lesson_shape.notebook_shape(path, executed)])[0]
    assert row["sweeps and timelines"] == "1" and row["comparisons"] == "1"


def test_the_benchmark_prints_every_notebook_and_refuses_a_missing_folder(tmp_path):
    script = REPO_ROOT / "benchmarks" / "lesson_shape.py"
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True)
    assert "01_tensors_devices" in out.stdout and out.stdout.splitlines()[-2].startswith("all")
    missing = subprocess.run([sys.executable, str(script), "--executed", str(tmp_path / "nope")],
                             capture_output=True, text=True)
    assert missing.returncode == 2 and "not a folder of executed notebooks" in missing.stderr
