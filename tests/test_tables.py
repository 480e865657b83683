"""utils.tables: plain tables, and attempt(), a demo's one-line account of what a call does."""
import warnings

import pytest
import torch

from utils import lesson_shape
from utils.tables import Table, attempt


def test_attempt_says_what_a_call_returns_or_raises_in_one_line():
    assert attempt(lambda: "works") == "works" and attempt(lambda: 3) == "3"
    assert attempt(lambda: torch.ones(2, 3)) == "shape (2, 3)"
    assert attempt(lambda: torch.ones(2), ok="works") == "works"

    def raises():
        raise RuntimeError("Found no NVIDIA driver on your system. Please check that you have a GPU.\nmore")
    assert attempt(raises) == "RuntimeError: Found no NVIDIA driver on your system"
    assert attempt(raises, brief=True) == "RuntimeError"
    assert attempt(raises, containing="more") == "RuntimeError: more"
    assert attempt(raises, limit=12) == "RuntimeError: Found no…"   # cut at a word, and marked
    assert attempt(raises, limit=5) == "RuntimeError: Foun…"        # no word boundary near the limit
    assert attempt(raises, limit=len("Found no NVIDIA driver on your system")) == attempt(raises)


def test_attempt_reports_warnings_only_when_asked_and_never_lets_them_out():
    def warns():
        warnings.warn("careful. really")
        return 5
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning escaping attempt() would fail this test
        assert attempt(warns) == "5"
        assert attempt(warns, warned=True) == "5; UserWarning: careful. really"


def test_a_notice_silenced_by_message_stays_silent_when_warnings_are_shown():
    def warns():
        warnings.warn("Library notice: nothing to do")
        warnings.warn("the lesson")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Library notice", category=UserWarning)
        assert attempt(warns, warned=True) == "None; UserWarning: the lesson"
    assert attempt(warns, warned=True).count("UserWarning") == 2   # not silenced out here


def test_a_table_renders_as_html_and_text():
    table = Table({"a": 1, "b <c>": "x"}, caption="cap")
    assert "<caption>cap</caption>" in table._repr_html_() and "b &lt;c&gt;" in table._repr_html_()
    assert repr(table).splitlines()[:3] == ["cap", "name   value", "a      1    "]


def test_a_folded_table_shows_its_caption_and_opens_on_a_click():
    page = Table([{"op": "aten::mm", "time": "1 ms"}], caption="the full profile", folded=True)._repr_html_()
    assert page.startswith("<details><summary>the full profile</summary><table>") and "aten::mm" in page
    parser = lesson_shape._VisibleText()
    parser.feed(page)
    assert parser.words == ["the", "full", "profile"] and parser.table_widths == []  # a folded table is not seen
    with pytest.raises(ValueError, match="needs a caption"):
        Table([{"a": 1}], folded=True)


def test_long_cells_wrap_so_a_table_stays_narrow():
    message = "RuntimeError: view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces)"
    table = Table({"x_cl.view(2, -1) on a channels_last tensor": message}, caption="c")
    text = repr(table).splitlines()
    assert max(map(len, text)) <= 100 and len(text) > 3
    assert " ".join(" ".join(text[2:]).split()).endswith("two contiguous subspaces)")  # every word kept, in order
    parser = lesson_shape._VisibleText()
    parser.feed(table._repr_html_())
    assert parser.table_widths == [max(map(len, text[1:]))] and parser.table_widths[0] <= 100
