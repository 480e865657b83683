"""What autograde's per-submission line says: why points were lost, and the written
answers' points, which the autograder never gives; and the per-exercise deadline's option."""
import pytest

from grader import cli, grading, sandbox
from grader.autograde import Outcome


def _result(verdicts, cells=None, unreadable=None):
    return grading.Result("ann", "02_tensor_toolbox", verdicts=verdicts, cells=cells or {}, unreadable=unreadable)


def test_a_syntax_error_is_named_with_its_answer_cell():
    result = _result({"test_one_hot_values": (0.0, "one_hot is not defined"), "test_pairwise": (0.0, "...")},
                     {"one_hot": {"ok": False, "error": "SyntaxError: invalid syntax (<cell>, line 2)", "output": ""},
                      "pairwise": {"ok": True, "error": None, "output": ""}})
    assert grading.reason(result) == "SyntaxError in the answer cell one_hot"


def test_tests_stopped_at_the_deadline_are_counted():
    stopped = "one_hot: the grader stopped your code after 60 s: it did not finish in time (an endless loop?)"
    raised = "one_hot: your code raised DeadlineExceeded: the grader stopped it after 60 s: it did not finish in time"
    result = _result({"a": (0.0, stopped), "b": (0.0, raised), "c": (1.0, "passed"), "d": (0.0, "values differ")})
    assert grading.reason(result) == "2 tests stopped at the 60 s deadline, 1 more not passed"


def test_an_answer_cell_that_hit_the_deadline_says_so():
    error = "DeadlineExceeded: the grader stopped it after 8 s: it did not finish in time"
    result = _result({"a": (0.0, "x")}, {"one_hot": {"ok": False, "error": error},
                                          "other": {"ok": False, "error": "NameError: name 'np' is not defined"}})
    assert grading.reason(result) == "the answer cell one_hot stopped at the 8 s deadline (and 1 other answer cell failed)"


def test_other_lost_points_name_a_test_and_nothing_lost_says_nothing():
    result = _result({"test_range": (0.0, "one_hot(labels, 3) with a label of 5: no error was raised " * 3)})
    assert grading.reason(result).startswith("1 test not passed, e.g. test_range: one_hot(labels, 3) with")
    assert grading.reason(result).endswith(" ...") and len(grading.reason(result)) < 140
    assert grading.reason(_result({"a": (1.0, "passed")})) == ""
    assert grading.reason(_result({"a": (0.0, "not graded")}, unreadable="not a notebook")) == ""  # the note says it


def test_the_line_gives_the_reason_after_the_score():
    line = Outcome("hung", "02_tensor_toolbox", 6, 12, seconds=63.5, lost="3 tests stopped at the 60 s deadline").line()
    assert line == "hung 02_tensor_toolbox: 6 / 12 in 63.5 s: 3 tests stopped at the 60 s deadline"


def test_the_line_names_written_points_waiting_or_left_blank():
    blank = Outcome("sample_correct", "07_speed_knobs", 10, 12, seconds=3.0, blank=2).line()
    assert blank == "sample_correct 07_speed_knobs: 10 / 12 in 3.0 s: written answer left blank: 0 / 2, nothing to grade"
    waiting = Outcome("ann", "07_speed_knobs", 10, 12, pending=2, skipped=True, lost="1 test not passed").line()
    assert waiting == ("ann 07_speed_knobs: 10 / 12: 1 test not passed; +2 written, left to the instructor "
                       "(formgrader's Manual Grading) (unchanged, kept)")
    assert Outcome("ann", "07_speed_knobs", 12, 12, seconds=2.0).line() == "ann 07_speed_knobs: 12 / 12 in 2.0 s"


def test_the_deadline_option_sets_the_limits_and_refuses_bad_values(capsys):
    parse = cli.build_parser().parse_args
    base = ["autograde", "--course-dir", "x"]
    assert parse(base).deadline == sandbox.Limits().cell_s == 60
    assert sandbox.Limits.with_deadline(60) == sandbox.Limits()  # the default changes nothing
    assert parse([*base, "--deadline", "300"]).deadline == 300
    longer = sandbox.Limits.with_deadline(300)
    assert (longer.cell_s, longer.wall_s, longer.cpu_s) == (300, 900, 900)
    assert sandbox.Limits.with_deadline(10).wall_s == sandbox.Limits().wall_s
    for bad in ("0", "-5", "1.5", "ten", "3601"):
        with pytest.raises(SystemExit) as exit_:
            parse([*base, "--deadline", bad])
        assert exit_.value.code == 2
        assert f"argument --deadline: {bad!r} is not a whole number of seconds from 1 to 3600" in capsys.readouterr().err
