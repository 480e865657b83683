import contextlib
import dataclasses
import json
import queue
import threading
import time

import pytest
import torch

from utils import bench, records
from utils.comparison import Timing
from utils.present import Result


def big():
    return torch.arange(2_000_000, dtype=torch.float32).sum()


def small():
    return torch.arange(20_000, dtype=torch.float32).sum()


def test_compare_finds_the_faster_variant(quick_bench, records_file):
    result = bench.compare("T000", ("100x more work", big), ("less work", small),
                           options=bench.Options(title="work", device="cpu"))
    assert [r.label for r in result.rows] == ["100x more work", "less work"]
    assert result.speedup(result.baseline) == 1.0
    assert result.speedup(result.rows[1]) > 5  # 100x less work: even a noisy machine shows it
    for row in result.rows:
        assert row.median > 0 and row.iqr >= 0 and row.runs >= 3


def test_same_op_measured_twice_agrees_within_the_iqr():
    a, b = torch.rand(256, 256), torch.rand(256, 256)
    bench.configure(False)  # full mode: several interleaved rounds
    result = bench.compare("T000", ("first", lambda: a @ b), ("second", lambda: a @ b),
                           options=bench.Options(memory=False, record=False))
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
                  options=bench.Options(title="demo", sizes={"N": 3}, device="cpu"))
    lines = [json.loads(line) for line in records_file.read_text().splitlines()]
    assert [(r["tip"], r["variant"], r["role"]) for r in lines] == [("T044", "a", "baseline"), ("T044", "b", "variant")]
    assert lines[0]["comparison"] == lines[1]["comparison"]
    assert lines[0]["speedup"] == 1.0 and lines[1]["speedup"] > 0
    assert lines[1]["extra"] == {"parameters": 8} and lines[1]["sizes"] == {"N": 3}
    assert lines[0]["device"] == "cpu" and lines[0]["quick"] is True
    assert lines[0]["peak_bytes"] >= 20_000 * 4  # arange's output
    assert lines[0]["torch"] == torch.__version__


def test_record_false_and_disabled_recording_write_nothing(quick_bench, records_file, monkeypatch):
    bench.compare("T000", ("a", small), ("b", small), options=bench.Options(record=False, memory=False))
    assert not records_file.exists()
    monkeypatch.setenv("COURSE_RECORDS", "")
    bench.compare("T000", ("a", small), ("b", small), options=bench.Options(memory=False))
    assert records.records_path() is None and not records_file.exists()


def test_comparison_renders_table_and_plot(quick_bench):
    result = bench.compare("T000", ("a", small), ("b", small), options=bench.Options(title="render <me>", record=False))
    page = result._repr_html_()
    assert '<div class="course-card">' in page and "render &lt;me&gt;" in page
    assert result.headline() in repr(result) and "<table>" in page
    details = page[page.index("<details>"):]  # the full table and the bar chart are folded
    assert "IQR" in details and "peak memory" in details and 'data-plot="bars"' in details


def test_comparison_round_trips_through_records(quick_bench, records_file):
    original = bench.compare("T000", ("a", small, {"k": 1}), ("b", big), options=bench.Options(sizes={"N": 1}))
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
        bench.compare("T000", *args, options=bench.Options(record=False))


def test_tip_id_is_required(quick_bench):
    with pytest.raises(ValueError, match="curriculum ID"):
        bench.compare("", ("a", small), ("b", small))


@pytest.mark.parametrize("fields,error,message", [
    ({"rate": ("GB/s",)}, TypeError, r"rate must be \(unit, work per call\), e.g. \('GB/s', 0.27\); got \('GB/s',\)"),
    ({"rate": ("GB/s", "0.27")}, TypeError, r"rate must be \(unit, work per call\)"),
    ({"rate": (0.27, "GB/s")}, TypeError, r"rate must be \(unit, work per call\)"),
    ({"needs": "tpu"}, ValueError, r"needs must be one of \['cuda', 'gpu'\], got 'tpu'"),
    ({"metric": "memory", "memory": False}, ValueError, "metric='memory' needs the peak memory: drop memory=False"),
    ({"ahead": {"b": -1}}, ValueError, r"ahead\['b'\] must be a number of calls \(an int >= 0\), got -1"),
])
def test_options_check_each_field_when_made(fields, error, message):
    with pytest.raises(error, match=message):
        bench.Options(**fields)


def test_options_are_keywords_only_and_frozen():
    with pytest.raises(TypeError):
        bench.Options("a title")
    with pytest.raises(dataclasses.FrozenInstanceError):
        bench.Options().title = "a title"


def test_compare_checks_what_needs_the_labels():
    with pytest.raises(ValueError, match=r"headline must name a variant after the baseline, one of \['b'\]; got 'a'"):
        bench.compare("T000", ("a", small), ("b", small), options=bench.Options(headline="a"))


@pytest.mark.parametrize("call,message", [
    (lambda: bench.compare("T000", ("a", small), ("b", small), title="old", device="cpu"),
     r"compare\(\) takes its options as one value: pass options=bench.Options\(title=..., device=...\)"),
    (lambda: bench.sweep("T000", "n", [1, 2], lambda n: [("a", small), ("b", small)], title="old", rate=None),
     r"sweep\(\) takes its options as one value: pass options=bench.Options\(title=...\)"),
    (lambda: bench.compare("T000", ("a", small), ("b", small), options={"title": "old"}),
     r"compare\(\): options must be a bench.Options, got dict"),
])
def test_an_old_style_keyword_says_to_pass_options(call, message):
    with pytest.raises(TypeError, match=message):
        call()


def test_a_sweep_needs_a_title_and_takes_its_rate_itself():
    def variants(n):
        return [("a", small), ("b", small)]
    with pytest.raises(ValueError, match="a sweep needs a title"):
        bench.sweep("T000", "n", [1, 2], variants)
    with pytest.raises(ValueError, match=r"pass sweep\(..., rate=\(unit, work\)\), not Options\(rate=...\)"):
        bench.sweep("T000", "n", [1, 2], variants, options=bench.Options(title="t", rate=("GB/s", 1.0)))


def made_up_timings(variants, device, memory, row_devices=None, ahead=None):
    """In place of a measurement: variant i takes i ms a call."""
    return [Timing(label, 1e-3 * i, 1e-4, 20, 1000 * i if memory else None, "allocator" if memory else None,
                   dict(extra), [1e-3 * i] * 2, None, 0.95e-3 * i, 1.05e-3 * i)
            for i, (label, _, extra) in enumerate(variants, start=1)]


def test_options_give_the_records_the_keywords_gave(quick_bench, records_file, monkeypatch):
    """The records that compare(..., title=..., sizes=..., ...) wrote before Options, for the same inputs."""
    monkeypatch.setattr(bench, "_measure_interleaved", made_up_timings)
    monkeypatch.setenv("COURSE_NOTEBOOK", "x.ipynb")
    options = bench.Options(title="demo", sizes={"N": 3}, why="T044", headline="b", facts={"x": 1.5},
                            rate=("GB/s", 2.0), about_overhead=True, host=True)
    result = bench.compare("T044", ("a", small, {"parameters": 10}), ("b", small, {"parameters": 8}), options=options)
    shared = {"tip": "T044", "title": "demo", "device": "cpu", "sizes": {"N": 3}, "runs": 20, "iqr_s": 1e-4,
              "memory_method": "allocator", "notebook": "x.ipynb", "quick": True, "device_s": None,
              "about_overhead": True, "host": True, "sizes_spec": None, "why": "T044", "headline_variant": "b",
              "facts": {"baseline_rate": "2,000 GB/s", "variant_rate": "1,000 GB/s", "x": "1.5"},
              "variant_device": "cpu", "metric": ""}
    rows = [{"variant": "a", "role": "baseline", "median_s": 1e-3, "speedup": 1.0, "peak_bytes": 1000,
             "extra": {"GB/s": "2,000", "parameters": 10}, "round_medians": [1e-3, 1e-3], "verdict": "baseline"},
            {"variant": "b", "role": "variant", "median_s": 2e-3, "speedup": 0.5, "peak_bytes": 2000,
             "extra": {"GB/s": "1,000", "parameters": 8}, "round_medians": [2e-3, 2e-3], "verdict": "slower"}]
    written = records.load(records_file)
    assert [{k: dataclasses.asdict(r)[k] for k in {**shared, **row}} for r, row in zip(written, rows)] == \
        [{**shared, **row} for row in rows]
    assert result.records == written and result.headline().startswith("b: 2.00x the time of a on CPU")
    default, none = (bench.compare("T000", ("a", small), ("b", small), options=o) for o in (bench.Options(), None))
    assert default == none


@pytest.mark.parametrize("seconds,text", [(2.5, "2.5 s"), (0.0123, "12.3 ms"), (4.2e-6, "4.2 µs"), (3e-9, "3 ns")])
def test_format_seconds(seconds, text):
    assert bench.format_seconds(seconds) == text


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_timing_includes_the_kernel_not_just_the_launch(quick_bench):
    x = torch.rand(4096, 4096, device="cuda")
    timing = bench.measure(lambda: x @ x, device="cuda")
    # 2*4096^3 FLOP: no GPU does that in under 10 µs, so an unsynchronized timer would be caught.
    assert timing.median > 1e-5


@pytest.mark.parametrize("labels,device,devices,host,expected", [
    (["a", "b"], "cuda", None, False, ("cuda", ["cuda", "cuda"])),
    (["a", "b"], "cuda", {"a": "cpu"}, False, ("cuda", ["cpu", "cuda"])),       # a CPU baseline beside a GPU variant
    (["a", "b"], "cpu", {"b": "cuda:1"}, False, ("cuda:1", ["cpu", "cuda:1"])),  # a GPU variant makes it the GPU's
    (["a", "b"], "cuda", None, True, ("cpu", ["cpu", "cpu"])),                   # host=True: the CPU, whatever device says
    (["a", "b"], "mps", {"a": "cpu"}, False, ("mps", ["cpu", "mps"])),
])
def test_placement_gives_a_comparison_with_a_gpu_variant_the_gpus_device(labels, device, devices, host, expected):
    where, rows = bench.placement(labels, device, devices, host)
    assert (str(where), [str(d) for d in rows]) == (expected[0], expected[1])


def test_placement_refuses_a_host_comparison_on_a_gpu_and_unknown_labels():
    with pytest.raises(ValueError, match="host=True"):
        bench.placement(["a", "b"], "cpu", {"b": "cuda"}, host=True)
    with pytest.raises(ValueError, match=r"names no variant: \['c'\]"):
        bench.placement(["a", "b"], "cuda", {"c": "cpu"})


@pytest.fixture
def fake_gpu(monkeypatch):
    """A CUDA device as bench sees it, on a machine without one: the variants still run on the CPU,
    the profiler's GPU time and the device's name are made up (2 ms of kernels a call)."""
    monkeypatch.setattr(bench, "_on_device", lambda device: __import__("contextlib").nullcontext())
    monkeypatch.setattr(bench, "gpu_seconds_per_call",
                        lambda fn, device, calls=3: 2e-3 if torch.device(device).type == "cuda" else None)
    monkeypatch.setattr(bench, "device_name",
                        lambda device: "Fake GPU" if torch.device(device).type == "cuda" else "Fake CPU")


def test_a_cpu_baseline_beside_a_gpu_variant_is_recorded_per_variant(quick_bench, records_file, fake_gpu):
    """The H100 run recorded T081's nvJPEG decode and T105's GPU serving as 'cpu' (host=True around
    GPU work), so their captions said CPU and claim C074 was 'about GPUs' and unmeasurable."""
    result = bench.compare("T105", ("CPU, all threads", big), ("GPU", small), options=bench.Options(
        title="serve", device="cuda", devices={"CPU, all threads": "cpu"}, memory=True))
    assert (result.device, result.device_name, result.on_gpu) == ("cuda", "Fake GPU", True)
    cpu_row, gpu_row = result.rows
    assert cpu_row.device_s is None and gpu_row.device_s == 2e-3   # no GPU time for a row that ran on the CPU
    assert cpu_row.peak_bytes is None and gpu_row.peak_bytes is None  # peaks on two devices are not comparable
    assert [row[bench.RUNS_ON] for row in result.table_rows(compact=True)] == ["cpu", "cuda"]
    assert "Fake GPU" in result.caption()
    written = records.load(records_file)
    assert [(r.device, r.device_name) for r in written] == [("cuda", "Fake GPU")] * 2
    assert [(r.runs_on, r.variant_device_name) for r in written] == [("cpu", "Fake CPU"), ("cuda", "Fake GPU")]
    rebuilt = Result.from_records(written)
    assert rebuilt.on_gpu and rebuilt.table_rows() == result.table_rows()


def test_variants_on_one_device_record_it_and_get_no_device_column(quick_bench, records_file, fake_gpu):
    result = bench.compare("T000", ("a", small), ("b", small),
                           options=bench.Options(title="same device", device="cuda", memory=False))
    assert all(bench.RUNS_ON not in row for row in result.table_rows())
    assert [row.device_s for row in result.rows] == [2e-3, 2e-3]
    assert [(r.device, r.runs_on) for r in records.load(records_file)] == [("cuda", "cuda")] * 2
    host = bench.compare("T000", ("a", small), ("b", small),
                         options=bench.Options(title="host side", device="cuda", host=True, memory=False))
    assert host.device == "cpu" and [row.device_s for row in host.rows] == [None, None]


def test_a_sweep_with_a_gpu_variant_is_the_gpus(quick_bench, fake_gpu):
    swept = bench.sweep("T000", "n", [1, 2], lambda n: [("CPU", small), ("GPU", small)], options=bench.Options(
        title="sweep", devices={"CPU": "cpu", "GPU": "cuda"}, needs="cuda", record=False))
    assert [c.device for c in swept.comparisons] == ["cuda", "cuda"]


def test_gpu_time_counts_kernels_copies_and_memsets_not_the_gpu_lanes_copies_of_labels():
    """On a GPU the profiler also puts each record_function label and ProfilerStep#N on the GPU's
    lane, spanning the kernels launched inside it: adding those up counted a labelled step twice."""
    from utils import trace

    cuda, cpu = torch.autograd.DeviceType.CUDA, torch.autograd.DeviceType.CPU

    class Event:   # the methods of an event of prof.profiler.kineto_results.events() that bench reads
        def __init__(self, name, activity, annotation=False, device=cuda):
            self._values = {"name": name, "activity_type": activity, "is_user_annotation": annotation,
                            "device_type": device}

        def __getattr__(self, method):
            return lambda: self._values[method]

    work = [Event("void cudnn::conv_kernel", "kernel"), Event("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy"),
            Event("Memset (Device)", "gpu_memset")]
    not_work = [Event("model: forward + loss", "gpu_user_annotation", True), Event("ProfilerStep#3", "gpu_user_annotation", True),
                Event("Stream Sync", "cuda_sync"), Event("[memory]", "cpu_instant_event"),
                Event("aten::conv2d", "cpu_op", device=cpu)]
    assert [trace.kineto_gpu_work(e) for e in work + not_work] == [True] * 3 + [False] * 5
    # a release without activity types: the name and the annotation flag decide
    assert trace.is_gpu_work("kernel") and not trace.is_gpu_work("[memory]")
    assert not trace.is_gpu_work("a label", annotation=True)


def test_long_calls_are_profiled_once_short_ones_several_times():
    from torch.utils.benchmark import Measurement
    from torch.utils.benchmark.utils.common import TaskSpec

    def rounds(seconds):
        block = Measurement(number_per_run=1, raw_times=[seconds], task_spec=TaskSpec(stmt="fn()", setup="pass"))
        return [[block, block, block]]

    assert bench._profiled_calls(rounds(0.5)) == 1                       # 0.5 s a call: once is plenty
    assert bench._profiled_calls(rounds(bench.LONG_CALL_S)) == 1
    assert bench._profiled_calls(rounds(1e-3)) == bench.PROFILED_CALLS   # short calls: launch jitter averages out


class Prefetcher:
    """A stand-in for an endless DataLoader with workers: ``workers`` threads each make a batch every
    ``make_s`` while at most ``depth`` wait (started together, they finish their batches together,
    as DataLoader workers do); a step takes the next batch, then works ``step_s``."""

    def __init__(self, workers: int, make_s: float, depth: int, step_s: float):
        self.ready, self.step_s, self.stopped = queue.Queue(maxsize=depth), step_s, threading.Event()

        def produce():
            while not self.stopped.is_set():
                time.sleep(make_s)
                while not self.stopped.is_set():
                    with contextlib.suppress(queue.Full):
                        self.ready.put(None, timeout=0.01)
                        break

        self.threads = [threading.Thread(target=produce, daemon=True) for _ in range(workers)]
        for thread in self.threads:
            thread.start()

    def step(self):
        self.ready.get()
        time.sleep(self.step_s)

    def close(self):
        self.stopped.set()
        for thread in self.threads:
            thread.join()


def test_a_variant_that_works_ahead_is_timed_in_its_steady_state(quick_bench):
    # Steady state: 4 workers, 48 ms a batch each, so a batch every 12 ms on average, in bursts of 4;
    # from a full buffer, 2 ms a step. Interleaved with a 10 ms baseline, the buffer (8 batches)
    # refills during the baseline's round, and QUICK's rounds of ~0.05 s would be mostly buffer.
    # Timed one call at a time, even the steady state would show 3 fast calls to 1 slow one.
    loader, calls = Prefetcher(workers=4, make_s=48e-3, depth=8, step_s=2e-3), []

    def logged(label, fn):
        def call():
            start = time.perf_counter()
            fn()
            calls.append((label, start, time.perf_counter()))
        return call

    try:
        result = bench.compare("T094", ("baseline", logged("baseline", lambda: time.sleep(10e-3))),
                               ("workers", logged("workers", loader.step)),
                               options=bench.Options(memory=False, record=False, ahead={"workers": 8}))
    finally:
        loader.close()
    workers = result.rows[1]
    assert workers.median >= 9e-3, f"the buffer's batches or a burst's were timed, not the steady state: {workers}"
    assert all(m >= 9e-3 for m in workers.round_medians), workers.round_medians
    # After its first round, the measurement waited while the buffer refilled (8 batches, ~96 ms)
    # before the baseline's second round, so that the refill did not run during that round.
    handovers = [later[1] - earlier[2] for earlier, later in zip(calls, calls[1:])
                 if (earlier[0], later[0]) == ("workers", "baseline")]
    assert handovers[-1] >= 0.75 * 8 * workers.median, (handovers, workers)


@pytest.mark.parametrize("ahead,error", [({"c": 2}, r"names no variant: \['c'\]"), ({"b": -1}, "int >= 0"),
                                         ({"b": 1.5}, "int >= 0"), ({"b": True}, "int >= 0")])
def test_ahead_must_name_a_variant_and_count_calls(quick_bench, ahead, error):
    with pytest.raises(ValueError, match=error):
        bench.compare("T000", ("a", small), ("b", small), options=bench.Options(record=False, ahead=ahead))
