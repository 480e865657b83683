"""CUDA-only checks (skipped without a GPU; the GPU CI job runs them): the timer really waits for
the GPU, the launch-bound detector tells launches from work, the robust GPU effects the course
teaches show up, and a notebook run on CUDA records GPU measurements including the GPU-only tips."""
import time

import pytest
import torch

from grader import course
from utils import bench, trace
from utils.execute import check_records, run_one
from utils.memory import peak_memory

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
MiB = 2**20


@pytest.fixture
def x():
    return torch.rand(4096, 4096, device="cuda")


def event_seconds(fn, calls=10):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn()
    torch.cuda.synchronize()
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3 / calls


def test_timer_agrees_with_cuda_events_and_a_timer_without_sync_reads_far_lower(quick_bench, x):
    matmul = lambda: x @ x  # noqa: E731  ~2.7 ms on an H100, far more than a launch
    events = event_seconds(matmul)
    timed = bench.measure(matmul, device="cuda").median
    assert 0.5 < timed / events < 2.0, (timed, events)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(10):
        matmul()
    unsynced = (time.perf_counter() - start) / 10   # launches only: the queue is not drained
    torch.cuda.synchronize()
    assert unsynced * 10 <= events, (unsynced, events)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_timing_on_a_second_gpu_waits_for_that_gpu(quick_bench):
    y = torch.rand(4096, 4096, device="cuda:1")
    torch.cuda.set_device(0)
    timed = bench.measure(lambda: y @ y, device="cuda:1").median
    with torch.cuda.device(1):
        events = event_seconds(lambda: y @ y)
    assert 0.5 < timed / events < 2.0


def test_launch_bound_detector_tells_launches_from_work(quick_bench, x):
    tiny = torch.rand(16, device="cuda")
    launches = bench.compare("T000", ("add", lambda: tiny + 1), ("mul", lambda: tiny * 2),
                             options=bench.Options(device="cuda", memory=False, record=False))
    assert launches.launch_bound() and launches.verdict("mul").kind == "launch-bound"
    work = bench.compare("T000", ("two matmuls", lambda: (x @ x, x @ x)), ("one matmul", lambda: x @ x),
                         options=bench.Options(device="cuda", memory=False, record=False))
    assert work.launch_bound() is None and work.baseline.device_s > 1e-3
    assert work.verdict("one matmul").kind == "faster"


def test_pinned_copies_beat_pageable_ones(quick_bench):
    pageable = torch.randn(64 * MiB // 4)
    pinned = pageable.pin_memory()
    c = bench.compare("T017", ("pageable", lambda: pageable.to("cuda")), ("pinned", lambda: pinned.to("cuda")),
                      options=bench.Options(device="cuda", memory=False, record=False, about_overhead=True))
    assert c.speedup(c.row("pinned")) > 1.3, c


def test_side_stream_copy_overlaps_compute(quick_bench, x):
    pinned = torch.randn(64 * MiB // 4).pin_memory()
    side = torch.cuda.Stream()

    def serial():
        return pinned.to("cuda", non_blocking=True), x @ x

    def overlapped():
        with torch.cuda.stream(side):
            batch = pinned.to("cuda", non_blocking=True)
        out = x @ x
        torch.cuda.current_stream().wait_stream(side)
        batch.record_stream(torch.cuda.current_stream())
        return batch, out

    c = bench.compare("T016", ("one stream", serial), ("side stream", overlapped),
                      options=bench.Options(device="cuda", memory=False, record=False, about_overhead=True))
    assert c.speedup(c.row("side stream")) > 1.1, c


def test_del_lowers_peak_memory():
    n = 32 * MiB // 4

    def keep():
        a = torch.ones(n, device="cuda")
        b, c, d = a * 2, a * 3, a * 4
        return (b + c + d).sum()

    def drop():
        a = torch.ones(n, device="cuda")
        b = a * 2
        del a
        b = b * 1.5
        return b.sum()

    kept, _ = peak_memory(keep, "cuda")
    dropped, _ = peak_memory(drop, "cuda")
    assert dropped < 0.7 * kept, (dropped, kept)


def test_a_notebook_run_on_cuda_records_gpu_measurements_and_the_gpu_only_tips(tmp_path, monkeypatch):
    records = tmp_path / "m.jsonl"
    monkeypatch.setenv("COURSE_RECORDS", str(records))
    source = course.find("01_tensors_devices").source_dir / "01_tensors_devices.ipynb"
    run = run_one(source, tmp_path, quick=True, device="cuda")
    assert run.ok, run.error
    assert check_records([source], records, "cuda") == []


def test_a_timeline_agrees_with_its_cards_median(quick_bench, x):
    """The drawn call is a typical one: no profiler start-up (a slow first kernel) inside it. The loop
    starts with a fresh allocation, as T020's does, where the start-up used to show."""
    def loop():
        total = torch.zeros((), device="cuda")
        for _ in range(4):
            total += (x @ x).sum()
        return total.item()
    card = bench.compare("T900", ("loop", loop), ("again", loop), options=bench.Options(device="cuda", record=False))
    shown = bench.timeline("T900", ("loop", loop), title="t", device="cuda")
    span = max(s.end for s in shown.spans) - min(s.start for s in shown.spans)
    row = card.baseline
    spread = max(row.iqr, 0.02 * row.median)   # the card's own: two stretches of unprofiled calls differ this much
    # the drawn call ran under the profiler: a little longer, never shorter (trace.PROFILED_SLOWER)
    assert -spread <= span - row.median <= spread + trace.PROFILED_SLOWER * row.median, (span, row)


def test_a_cpu_row_beside_gpu_rows_is_recorded_on_the_gpu_with_its_own_device(quick_bench, x, records_file):
    """T105's card: the GPU's rows and this machine's CPU measured side by side."""
    from utils import records

    host = torch.rand(1024, 1024)
    result = bench.compare("T105", ("GPU", lambda: x @ x), ("CPU", lambda: host @ host),
                           options=bench.Options(title="mixed", device="cuda", devices={"CPU": "cpu"}, memory=False))
    assert result.device.startswith("cuda") and result.on_gpu
    assert result.rows[0].device_s > 0 and result.rows[1].device_s is None
    assert [r.runs_on.split(":")[0] for r in records.load(records_file)] == ["cuda", "cpu"]


def test_a_labelled_steps_gpu_time_counts_its_kernels_once(quick_bench, x):
    """The GPU lane's copy of a record_function label spans the kernels inside it: summing every
    GPU-side event counted a labelled step's kernels twice."""
    from torch.profiler import record_function

    def labelled():
        with record_function("outer"):
            with record_function("inner"):
                x @ x

    plain = bench.gpu_seconds_per_call(lambda: x @ x, torch.device("cuda"))
    assert 0.8 < bench.gpu_seconds_per_call(labelled, torch.device("cuda")) / plain < 1.25


def test_a_profiled_steps_gpu_time_and_python_lines_on_cuda():
    """09's readers on real CUDA profiles, made as 09 makes them: the step's GPU time holds the
    backward kernels (a plain profile), and the data pipeline's operators are traced to Python lines
    (with_stack and the verbose config; the H100 run showed only "no frame"). On the H200 (torch
    2.11) the phases of ONE profile made with both added up to 5% more GPU time than the step
    (0.420 ms against 0.401), and on the H100 so did a plain profile's (0.167 + 0.270 against
    0.421): the reader counted some kernels twice. It now counts each GPU event once, by its launch."""
    from torch.profiler import ProfilerActivity, profile, record_function

    from utils import profiling

    model = profiling.small_cnn(64, "cuda")
    data = profiling.PerSampleImages(*profiling.random_images(64))
    images = torch.stack([data[i][0] for i in range(64)]).cuda()

    def step():
        with record_function("data: next(loader)"):
            torch.stack([data[i][0] for i in range(8)])
        with record_function("model: forward + loss"):
            loss = model(images).sum()
        with record_function("model: backward"):
            loss.backward()

    step()
    torch.cuda.synchronize()
    activities = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    with profile(activities=activities) as prof:
        step()
        torch.cuda.synchronize()
    times = profiling.phase_times(prof, ["model: forward + loss", "model: backward"], 1, "cuda")["GPU kernel time"]
    assert times["model: backward"] > 0.5 * times["model: forward + loss"] > 0
    # every GPU event counts once, for one phase at most (an H100 profile once read 0.167 + 0.273 ms against 0.421)
    assert times[profiling.STEP] >= times["model: forward + loss"] + times["model: backward"] - 1e-6, times
    assert times["model: forward + loss"] + times["model: backward"] > 0.8 * times[profiling.STEP], times

    stacks = torch.profiler._ExperimentalConfig(verbose=True)  # some builds record no frame as an event
    with profile(activities=activities, with_stack=True, experimental_config=stacks) as detail:
        step()
        torch.cuda.synchronize()
    frames = profiling.PythonFrames(detail)
    callers = {profiling.python_caller(e, frames) for e in profiling.ops_inside(detail, "data: next(loader)")}
    if not profiling.records_python_frames(verbose=True):   # found from a tiny CPU profile, not the version
        assert callers == {profiling.NO_FRAME} and frames.note, callers
        pytest.skip(f"torch {torch.__version__} records no Python frame even with the verbose config")
    assert any(c.endswith("augment_one") for c in callers), callers
