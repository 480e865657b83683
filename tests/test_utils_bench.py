import json

import pytest
import torch

from utils import bench, records
from utils.present import Result


def big():
    return torch.arange(2_000_000, dtype=torch.float32).sum()


def small():
    return torch.arange(20_000, dtype=torch.float32).sum()


def test_compare_finds_the_faster_variant(quick_bench, records_file):
    result = bench.compare("T000", ("100x more work", big), ("less work", small), title="work", device="cpu")
    assert [r.label for r in result.rows] == ["100x more work", "less work"]
    assert result.speedup(result.baseline) == 1.0
    assert result.speedup(result.rows[1]) > 5  # 100x less work: even a noisy machine shows it
    for row in result.rows:
        assert row.median > 0 and row.iqr >= 0 and row.runs >= 3


def test_same_op_measured_twice_agrees_within_the_iqr():
    a, b = torch.rand(256, 256), torch.rand(256, 256)
    bench.configure(False)  # full mode: several interleaved rounds
    result = bench.compare("T000", ("first", lambda: a @ b), ("second", lambda: a @ b), memory=False, record=False)
    first, second = result.rows
    # Interleaved rounds share the machine's noise; a missing warm-up or a biased order would show
    # as a gap far beyond the spread. The 25% floor keeps a busy shared host from failing the test.
    gap = abs(first.median - second.median)
    assert gap <= max(first.iqr + second.iqr, 0.25 * min(first.median, second.median)), result


def test_timer_uses_all_threads_not_timers_default_of_one():
    timer = bench._timer(small, "x", torch.device("cpu"))
    assert timer._task_spec.num_threads == torch.get_num_threads()


def test_records_one_line_per_variant(quick_bench, records_file):
    bench.compare("T044", ("a", small, {"parameters": 10}), ("b", small, {"parameters": 8}),
                  title="demo", sizes={"N": 3}, device="cpu")
    lines = [json.loads(line) for line in records_file.read_text().splitlines()]
    assert [(r["tip"], r["variant"], r["role"]) for r in lines] == [("T044", "a", "baseline"), ("T044", "b", "variant")]
    assert lines[0]["comparison"] == lines[1]["comparison"]
    assert lines[0]["speedup"] == 1.0 and lines[1]["speedup"] > 0
    assert lines[1]["extra"] == {"parameters": 8} and lines[1]["sizes"] == {"N": 3}
    assert lines[0]["device"] == "cpu" and lines[0]["quick"] is True
    assert lines[0]["peak_bytes"] >= 20_000 * 4  # arange's output
    assert lines[0]["torch"] == torch.__version__


def test_record_false_and_disabled_recording_write_nothing(quick_bench, records_file, monkeypatch):
    bench.compare("T000", ("a", small), ("b", small), record=False, memory=False)
    assert not records_file.exists()
    monkeypatch.setenv("COURSE_RECORDS", "")
    bench.compare("T000", ("a", small), ("b", small), memory=False)
    assert records.records_path() is None and not records_file.exists()


def test_comparison_renders_table_and_plot(quick_bench):
    result = bench.compare("T000", ("a", small), ("b", small), title="render <me>", record=False)
    page = result._repr_html_()
    assert '<div class="course-card">' in page and "render &lt;me&gt;" in page
    assert result.headline() in repr(result) and "<table>" in page
    details = page[page.index("<details>"):]  # the full table and the bar chart are folded
    assert "IQR" in details and "peak memory" in details and 'data-plot="bars"' in details


def test_comparison_round_trips_through_records(quick_bench, records_file):
    original = bench.compare("T000", ("a", small, {"k": 1}), ("b", big), sizes={"N": 1})
    rebuilt = Result.from_records(records.load(records_file))
    assert rebuilt.table_rows() == original.table_rows()
    assert rebuilt.caption() == original.caption()


@pytest.mark.parametrize("args,error", [
    ((("a", small),), ValueError),                           # no variant
    ((("a", small), ("a", small)), ValueError),              # duplicate labels
    ((("a", small), ("b",)), TypeError),                     # malformed variant
    ((("a", small), ("b", 3)), TypeError),                   # not callable
    ((("a", small), ("b", small, [1])), TypeError),          # extra not a dict
])
def test_bad_arguments_get_clear_errors(quick_bench, args, error):
    with pytest.raises(error):
        bench.compare("T000", *args, record=False)


def test_tip_id_is_required(quick_bench):
    with pytest.raises(ValueError, match="curriculum ID"):
        bench.compare("", ("a", small), ("b", small))


@pytest.mark.parametrize("seconds,text", [(2.5, "2.5 s"), (0.0123, "12.3 ms"), (4.2e-6, "4.2 µs"), (3e-9, "3 ns")])
def test_format_seconds(seconds, text):
    assert bench.format_seconds(seconds) == text


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_timing_includes_the_kernel_not_just_the_launch(quick_bench):
    x = torch.rand(4096, 4096, device="cuda")
    timing = bench.measure(lambda: x @ x, device="cuda")
    # 2*4096^3 FLOP: no GPU does that in under 10 µs, so an unsynchronized timer would be caught.
    assert timing.median > 1e-5
