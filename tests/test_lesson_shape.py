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
    assert row["sweeps, timelines"] == "1" and row["comparisons"] == "1"


def test_the_benchmark_prints_every_notebook_and_refuses_a_missing_folder(tmp_path):
    script = REPO_ROOT / "benchmarks" / "lesson_shape.py"
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    assert "01_tensors_devices" in out.stdout and lines[-3].startswith("all") and lines[-2].startswith("target")
    missing = subprocess.run([sys.executable, str(script), "--executed", str(tmp_path / "nope")],
                             capture_output=True, text=True)
    assert missing.returncode == 2 and "not a folder of executed notebooks" in missing.stderr


def test_exercise_statements_and_visible_tests_are_measured(tmp_path):
    def graded(source, solution=False, **kw):
        cell = new_code_cell(source) if kw.pop("code", True) else new_markdown_cell(source)
        cell.metadata["nbgrader"] = {"grade": True, "solution": solution, **kw}
        return cell
    cells = [new_code_cell("QUICK = True", metadata={"tags": ["parameters"]}),
             new_code_cell("dev = setup(DEVICE, quick=QUICK)\nn = 8 if QUICK else 64"),
             new_markdown_cell("## Exercises\n\nmany words of the intro are not counted"),
             new_markdown_cell("### Exercise 1 · Five words here\n\n```python\ndef f(x): ...\n```\nthen three more"),
             new_markdown_cell("A second cell: five words."),
             graded("def f(x):\n    return x", solution=True),
             graded("# checks f\n\nassert f(1) == 1\nassert f(2) == 2"),
             new_markdown_cell("### Exercise 2 · Measure\none two"),
             graded("**For the instructor** many rubric words", solution=True, code=False),
             new_markdown_cell("## Summary\nnot an exercise")]
    path, _ = _notebook(tmp_path, cells)
    shape = lesson_shape.notebook_shape(path)
    assert shape.spec_words == [15, 7] and shape.test_lines == [3] and shape.quick_branches == 1


def test_a_headline_and_the_widest_table_are_read_from_the_outputs(tmp_path):
    old_card = ('<div class="course-card"><p><b>T001 · demo</b> · tip: 2.00x as fast as base (2 ms → 1 ms). '
                'More.</p></div>')
    new_card = ('<div class="course-card"><p><b>T002 · demo</b> · <span class="course-headline">a b c.</span></p>'
                '<table><tr><th>variant</th><th>median</th></tr><tr><td>a long variant name</td><td>1 ms</td></tr>'
                '</table><details><table><tr><td>xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx</td></tr></table></details></div>')
    outputs = [[new_output("display_data", {"text/html": old_card})], [new_output("display_data", {"text/html": new_card})],
               [new_output("stream", name="stdout", text="short\n" + "y" * 40)]]
    path, executed = _notebook(tmp_path, [new_code_cell("a"), new_code_cell("b"), new_code_cell("c")], outputs)
    output = lesson_shape.notebook_shape(path, executed).output
    assert output.headline_words == [11, 3]       # the first sentence only; a folded table is not shown
    assert output.widest == 40                     # the stream's line beats the table's 19 + 2 + 6


def test_it_reads_the_class_names_the_cards_are_written_with():
    from utils import present
    assert (lesson_shape.CARD_CLASS, lesson_shape.HEADLINE_CLASS) == (present.CARD, present.HEADLINE)


def test_every_solution_notebook_keeps_the_static_targets():
    """What does not depend on a run: short lesson cells, no narration in code, sizes from bench.sizes
    only, exercise statements and visible checks a learner reads at a glance."""
    from utils.paths import SOLUTIONS
    targets = lesson_shape.TARGETS
    for path in sorted(SOLUTIONS.glob("*/*.ipynb")):
        shape = lesson_shape.notebook_shape(path)
        assert not shape.long_cells and shape.sentence_lines == 0, (path.name, shape)
        assert shape.quick_branches == 0, f"{path.name} reads QUICK outside setup(): take sizes from bench.sizes"
        assert shape.spec_words and max(shape.spec_words) <= targets["spec words"], (path.name, shape.spec_words)
        assert max(shape.test_lines) <= targets["test lines"], (path.name, shape.test_lines)
