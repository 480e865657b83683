"""Reading submissions defensively: every broken file gets a clear message."""
import json

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from grader.submission import MAX_BYTES, Unreadable, read

NAME = "01_x.ipynb"


def answer(grade_id, source, cell=new_code_cell):
    return cell(source, metadata={"nbgrader": {"grade_id": grade_id, "solution": True, "grade": False}})


def write(folder, nb, name=NAME):
    folder.mkdir(exist_ok=True)
    nbformat.write(nb, folder / name)


def test_answers_are_taken_by_grade_id(tmp_path):
    nb = new_notebook(cells=[new_code_cell("print('demo')"), answer("a", "x = 1"), answer("a", "x = 2"),
                             answer("b", "y = 1")])
    write(tmp_path, nb)
    got = read(tmp_path, NAME, ["a", "b", "c"])
    assert got.cells == {"a": "x = 1", "b": "y = 1"}  # the first cell with an id wins, like nbgrader
    assert any("'c' is missing" in n for n in got.notes)
    assert len(got.sha256) == 64


def test_a_retyped_answer_cell_is_reported(tmp_path):
    write(tmp_path, new_notebook(cells=[answer("a", "x = 1", cell=new_markdown_cell)]))
    got = read(tmp_path, NAME, ["a"])
    assert got.cells == {} and any("not a code cell" in n for n in got.notes)


def test_one_renamed_notebook_is_graded_with_a_note(tmp_path):
    write(tmp_path, new_notebook(cells=[answer("a", "x = 1")]), name="01_x (1).ipynb")
    got = read(tmp_path, NAME, ["a"])
    assert got.cells == {"a": "x = 1"} and "named 01_x.ipynb" in got.notes[0]


def test_unknown_kernel_is_ignored_with_a_note(tmp_path):
    nb = new_notebook(cells=[answer("a", "x = 1")], metadata={"kernelspec": {"name": "ir", "display_name": "R"}})
    write(tmp_path, nb)
    assert any("kernel 'ir'" in n for n in read(tmp_path, NAME, ["a"]).notes)


def test_old_nbformat_is_upgraded(tmp_path):
    v3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": [
        {"cell_type": "code", "input": "x = 1", "language": "python", "outputs": [],
         "metadata": {"nbgrader": {"grade_id": "a", "solution": True, "grade": False}}}]}]}
    (tmp_path / NAME).write_text(json.dumps(v3))
    assert read(tmp_path, NAME, ["a"]).cells == {"a": "x = 1"}


@pytest.mark.parametrize("content,message", [
    (b'{"cells": [', "not valid JSON"),
    (b"\xff\xfe{}", "not UTF-8"),
    (b'{"hello": 1}', "not a Jupyter notebook"),
    (b"[1, 2]", "not a Jupyter notebook"),
])
def test_broken_files_get_clear_messages(tmp_path, content, message):
    (tmp_path / NAME).write_bytes(content)
    with pytest.raises(Unreadable, match=message):
        read(tmp_path, NAME, ["a"])


def test_missing_notebook_lists_what_was_found(tmp_path):
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(Unreadable, match="expected 01_x.ipynb in the submission, found notes.txt"):
        read(tmp_path, NAME, ["a"])


def test_huge_file_is_refused(tmp_path):
    with open(tmp_path / NAME, "wb") as f:
        f.truncate(MAX_BYTES + 1)
    with pytest.raises(Unreadable, match="over the"):
        read(tmp_path, NAME, ["a"])


def test_huge_outputs_under_the_limit_are_ignored(tmp_path):
    cell = answer("a", "x = 1")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="y" * 5_000_000)]
    write(tmp_path, new_notebook(cells=[cell]))
    assert read(tmp_path, NAME, ["a"]).cells == {"a": "x = 1"}
