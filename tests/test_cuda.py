"""CUDA-only checks (skipped without a GPU; the GPU CI job runs them): the timer really waits for
the GPU, the launch-bound detector tells launches from work, the robust GPU effects the course
teaches show up, and a notebook run on CUDA records GPU measurements including the GPU-only tips."""
import time

import pytest
import torch

from grader import course
from utils import bench
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
                             device="cuda", memory=False, record=False)
    assert launches.launch_bound() and launches.verdict("mul").kind == "launch-bound"
    work = bench.compare("T000", ("two matmuls", lambda: (x @ x, x @ x)), ("one matmul", lambda: x @ x),
                         device="cuda", memory=False, record=False)
    assert work.launch_bound() is None and work.baseline.device_s > 1e-3
    assert work.verdict("one matmul").kind == "faster"


def test_pinned_copies_beat_pageable_ones(quick_bench):
    pageable = torch.randn(64 * MiB // 4)
    pinned = pageable.pin_memory()
    c = bench.compare("T017", ("pageable", lambda: pageable.to("cuda")), ("pinned", lambda: pinned.to("cuda")),
                      device="cuda", memory=False, record=False, about_overhead=True)
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

    c = bench.compare("T016", ("one stream", serial), ("side stream", overlapped), device="cuda",
                      memory=False, record=False, about_overhead=True)
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
