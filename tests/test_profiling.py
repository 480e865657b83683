"""utils.profiling: notebook 09's input pipeline, its profile readers, its trace folder, and its phase charts."""
import pickle

import pytest
import torch

from utils import plots, profiling
from utils.tables import Folded, attempt


def _images(n=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (n, 32, 32, 3), dtype=torch.uint8, generator=g)


def test_batched_augmentation_matches_per_sample():
    images = _images(12)
    params = profiling.random_params(12, generator=torch.Generator().manual_seed(1))
    one_by_one = torch.stack([profiling.augment_one(img, *p) for img, p in zip(images, zip(*(t.tolist() for t in params)))])
    torch.testing.assert_close(profiling.augment_batch(images, *params), one_by_one)
    assert one_by_one.shape == (12, 3, profiling.SIZE, profiling.SIZE) and one_by_one.dtype == torch.float32


def test_crop_and_flip_are_what_they_say():
    image = _images(1)[0]
    centre = (profiling.PAD, profiling.PAD)
    plain = profiling.augment_one(image, *centre, False, 1.0, 1.0)   # centre crop, no jitter: the image itself
    mean = torch.tensor(profiling.MEAN).view(3, 1, 1)
    std = torch.tensor(profiling.STD).view(3, 1, 1)
    torch.testing.assert_close(plain * std + mean, image.permute(2, 0, 1).float() / 255)
    torch.testing.assert_close(profiling.augment_one(image, *centre, True, 1.0, 1.0), plain.flip(2))
    shifted = profiling.augment_one(image, 0, 0, False, 1.0, 1.0) * std + mean     # top-left crop: zero padding shows
    assert torch.all(shifted[:, :profiling.PAD, :] == 0) and torch.all(shifted[:, :, :profiling.PAD] == 0)
    darker = profiling.augment_one(image, *centre, False, 0.5, 1.0) * std + mean
    torch.testing.assert_close(darker, image.permute(2, 0, 1).float() / 255 * 0.5)


def test_random_params_stay_in_range():
    tops, lefts, flips, brightness, contrast = profiling.random_params(500, generator=torch.Generator().manual_seed(2))
    for offsets in (tops, lefts):
        assert offsets.min() >= 0 and offsets.max() <= 2 * profiling.PAD
    assert flips.dtype == torch.bool and 0 < flips.sum() < 500
    for factors in (brightness, contrast):
        assert factors.min() >= 1 - profiling.JITTER and factors.max() <= 1 + profiling.JITTER


def test_dataset_items_and_pickling_for_worker_processes():
    images, labels = _images(4), torch.arange(4)
    dataset = profiling.PerSampleImages(images, labels)
    x, y = dataset[2]
    assert len(dataset) == 4 and x.shape == (3, 32, 32) and y == 2
    clone = pickle.loads(pickle.dumps(dataset))       # what "spawn" workers receive
    assert torch.equal(clone.images, images)
    with pytest.raises(ValueError):
        profiling.PerSampleImages(images.float(), labels)


def test_trace_dir_is_the_ignored_build_folder():
    path = profiling.trace_dir()
    assert path.is_dir() and path.parts[-2:] == ("build", "traces")
    assert path.parent.parent == profiling.Path(profiling.__file__).resolve().parents[1]


def test_phase_figure_draws_one_bar_per_phase_and_column():
    import matplotlib.pyplot as plt

    fig = plots.phase_figure({"before": {"a": 2.0, "b": 1.0}, "after": {"a": 0.5, "c": 1.5}}, "t")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b", "c"]
    assert len(ax.patches) == 6
    plt.close(fig)


def _profiled_steps(steps=2, waiting_thread=False):
    """A tiny profiled loop; ``waiting_thread``: with a helper thread that polls an event all the
    while, as a progress bar's monitor does (a leftover one failed CI: its wait was taken for the
    loop's line)."""
    import threading

    from torch.profiler import ProfilerActivity, profile, record_function, schedule

    images = _images(4)
    dataset = profiling.PerSampleImages(images, torch.arange(4))
    done = threading.Event()

    def poll():
        while not done.wait(0.0005):
            pass

    helper = threading.Thread(target=poll)
    if waiting_thread:
        helper.start()
    with profile(activities=[ProfilerActivity.CPU], with_stack=True,
                 schedule=schedule(wait=0, warmup=1, active=steps, repeat=1)) as prof:
        for _ in range(1 + steps):
            with record_function("data: next(loader)"):
                torch.stack([dataset[i][0] for i in range(4)])
            with record_function("model: forward + loss"):
                torch.ones(64, 64).matmul(torch.ones(64, 64))
            prof.step()
        done.set()
    if waiting_thread:
        helper.join()
    return prof


def test_phase_times_ops_inside_and_python_caller_read_a_profile():
    prof = _profiled_steps()
    times = profiling.phase_times(prof, ["data: next(loader)", "model: forward + loss"], 2)
    assert list(times) == ["CPU time"]                       # no GPU column off CUDA
    cpu = times["CPU time"]
    assert list(cpu) == ["data: next(loader)", "model: forward + loss", profiling.STEP]
    assert all(v > 0 for v in cpu.values()) and cpu[profiling.STEP] >= cpu["data: next(loader)"]
    grouped = profiling.grouped(cpu)
    assert list(grouped) == [profiling.INPUT, "model: forward + loss", profiling.STEP]
    ops = profiling.ops_inside(prof, "data: next(loader)")
    assert len(ops) > 2 * 4 * 10 and all(e.name.startswith("aten::") for e in ops)   # dozens of calls per image
    assert profiling.top_self_operator(prof.key_averages()).key.startswith("aten::")
    occurrences = profiling.occurrences_ms(prof, "model: forward + loss")
    assert occurrences == pytest.approx([e.cpu_time_total / 1e3 for e in profiling.label_events(
        prof, "model: forward + loss")], abs=2e-3) and len(occurrences) == 2, "the event tree's durations, in order"
    callers = {profiling.python_caller(e) for e in ops}
    _skip_where_no_frame_is_recorded(prof, callers)
    assert any(c.startswith("profiling.py:") and c.endswith("augment_one") for c in callers), callers


def _skip_where_no_frame_is_recorded(prof, callers=None):
    """Where this torch records no Python frame with ``with_stack=True`` alone (torch 2.11: found
    from a tiny profile, not from the version), the readers say so, and the test of the lines
    they name is skipped, naming the version."""
    frames = profiling.PythonFrames(prof)
    if profiling.records_python_frames():
        assert frames.recorded and frames.note is None
        return
    assert not frames.recorded and frames.frames == [] and f"torch {torch.__version__.split('+')[0]}" in frames.note
    assert callers is None or callers == {profiling.NO_FRAME}
    pytest.skip(f"torch {torch.__version__} records no Python frame with with_stack=True alone (as torch 2.11 "
                "on the H100 and H200 hosts): no line to find; torch 2.14.1 records them")


def test_without_python_frames_the_readers_say_so_and_why():
    """A profile made without with_stack: no frame, and the note says why (the same note as on torch 2.11)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as plain:
        torch.ones(4).add(1)
    frames = profiling.PythonFrames(plain)
    assert not frames.recorded and frames.frames == [] and frames.stacks == 0
    assert frames.note.startswith(f"torch {torch.__version__.split('+')[0]} recorded no Python frame")
    assert "verbose=True" in frames.note and "torch 2.11" in frames.note
    assert {profiling.python_caller(e, frames) for e in plain.events() if e.name.startswith("aten::")} == {profiling.NO_FRAME}
    assert isinstance(profiling.records_python_frames(), bool)


def test_cprofile_readers_and_attempt():
    import cProfile

    python_profile = cProfile.Profile()
    python_profile.enable()
    for _ in range(3):
        profiling.augment_one(_images(1)[0], 0, 0, False, 1.0, 1.0)
    python_profile.disable()
    calls, seconds, share = profiling.cprofile_function(python_profile, "augment_one")
    assert calls == 3 and seconds > 0 and 0 < share <= 1
    rows = profiling.cprofile_top(python_profile, 4)
    assert len(rows) == 4 and set(rows[0]) == {"function", "calls", "own time (tottime)", "with what it calls (cumtime)"}
    assert attempt(lambda: 1 / 0) == "ZeroDivisionError: division by zero"
    assert attempt(lambda: "runs") == "runs"


def test_a_phase_chart_is_an_inline_image_whatever_the_matplotlib_backend():
    """The H100 run drew both of 09's phase charts and showed neither: plt.show() displays nothing
    under a non-interactive backend (MPLBACKEND=Agg, a headless GPU host). plots.Shown embeds the PNG."""
    import matplotlib

    matplotlib.use("Agg")
    shown = plots.Shown(plots.phase_figure({"CPU time": {"a": 1.0}}, "t"), "phases")
    assert shown._repr_html_().startswith('<img data-plot="phases"') and "base64," in shown._repr_html_()


def test_the_executed_notebook_shows_both_phase_charts(quick_runs):
    """09 promises two phase charts: where one step spends its time, and before against after the fix."""
    import nbformat

    run, _, out = quick_runs["09_profiling"]
    assert run.ok, run.error
    executed = nbformat.read(out / "executed" / "09_profiling.ipynb", as_version=4)
    html = [output["data"]["text/html"] for cell in executed.cells if cell.cell_type == "code"
            for output in cell.get("outputs", []) if "text/html" in output.get("data", {})]
    assert sum(text.count('<img data-plot="phases"') for text in html) == 2


class _Raw:
    """An event of ``prof.profiler.kineto_results.events()``, the methods the readers call (times in µs)."""

    def __init__(self, name, start, end, device=profiling.CPU, activity="cpu_op", corr=0, linked=0, annotation=False):
        self._values = {"name": name, "start_ns": start * 1000, "end_ns": end * 1000, "device_type": device,
                        "activity_type": activity, "correlation_id": corr, "linked_correlation_id": linked,
                        "is_user_annotation": annotation}

    def __getattr__(self, method):
        return lambda: self._values[method]


def _launch(op, corr, start, kernel_start, duration, name="void conv_kernel", activity="kernel"):
    """A runtime call made by operator ``op`` (its correlation id) at ``start`` and the GPU event it queued."""
    cuda = torch.autograd.DeviceType.CUDA
    return [_Raw("cudaLaunchKernel", start, start + 5, activity="cuda_runtime", corr=corr, linked=op),
            _Raw(name, kernel_start, kernel_start + duration, device=cuda, activity=activity, corr=corr, linked=op)]


class _RecordedGpuProfile:
    """A finished CUDA profile of one training step, as its raw kineto events and ``key_averages()``
    give it (times in µs): the shape the H100 runs profiled, on a machine without a GPU. Besides the
    kernels: what the GPU lane and the CPU side add that is not work, or not the label's."""

    def __init__(self):
        from types import SimpleNamespace

        cuda = torch.autograd.DeviceType.CUDA
        self.raw = [
            _Raw("ProfilerStep#1", 0, 1000, activity="user_annotation", corr=1),
            _Raw("model: forward + loss", 100, 400, activity="user_annotation", corr=2),
            _Raw("aten::conv2d", 120, 200, corr=3), *_launch(3, 9001, 150, 300, 50),
            _Raw("aten::relu", 380, 395, corr=4), *_launch(4, 9002, 390, 420, 30),   # runs while backward is labelled
            _Raw("model: backward", 400, 600, activity="user_annotation", corr=5),
            _Raw("aten::convolution_backward", 450, 550, corr=6),   # autograd's thread: not the label's child
            *_launch(6, 9003, 460, 470, 80), *_launch(6, 9004, 500, 550, 20),
            _Raw("Stream Wait Event", 560, 590, device=cuda, activity="cuda_sync", corr=9005, linked=6),  # waiting
            # the profiler's own cost, on the CPU, with an id an operator also has (torch 2.11 gave it
            # that operator's kernels too)
            _Raw("Activity Buffer Request", 410, 415, activity="overhead", corr=3),
            _Raw("model: optimizer step", 600, 700, activity="user_annotation", corr=7),
            _Raw("aten::_foreach_add_", 610, 650, corr=8), *_launch(8, 9006, 620, 660, 10),
            _Raw("aten::copy_", 800, 820, corr=9),                                          # outside every label
            *_launch(9, 9007, 805, 830, 5, "Memcpy HtoD (Pageable -> Device)", "gpu_memcpy"),
            _Raw("void fill_kernel", 700, 707, device=cuda, activity="kernel", corr=9008, linked=3),  # no runtime call
            _Raw("model: forward + loss", 300, 470, device=cuda, activity="gpu_user_annotation", corr=2,
                 linked=2, annotation=True),
            _Raw("ProfilerStep#1", 300, 840, device=cuda, activity="gpu_user_annotation", linked=1, annotation=True),
            _Raw("[memory]", 130, 130, activity="cpu_instant_event"),
        ]
        self.profiler = SimpleNamespace(kineto_results=SimpleNamespace(events=lambda: self.raw))
        self._averages = [SimpleNamespace(key=key, device_type=profiling.CPU, cpu_time_total=t)
                          for key, t in (("ProfilerStep*", 1000), ("model: forward + loss", 300),
                                         ("model: backward", 200), ("model: optimizer step", 100))]

    def key_averages(self):
        return self._averages


PHASES3 = ["model: forward + loss", "model: backward", "model: optimizer step"]


def test_a_steps_gpu_time_counts_every_kernel_and_no_label_twice():
    """The H100 run said 'The GPU ran kernels for 1.84 ms per step' from the labels alone (the
    backward kernels, launched from autograd's thread, belong to no label), and 1.84 ms before,
    1.64 ms after under a card whose GPU time rose from 6.40 to 8.61 ms."""
    prof = _RecordedGpuProfile()
    step = (50 + 30 + 80 + 20 + 10 + 5 + 7) / 1e3    # kernels, a copy; no label's GPU copy, no wait
    assert profiling.gpu_ms_per_step(prof, 1) == pytest.approx(step)
    assert profiling.gpu_ms_per_step(prof, 2) == pytest.approx(step / 2)
    times = profiling.phase_times(prof, PHASES3, 1, "cuda")
    assert times["CPU time"][profiling.STEP] == 1.0


def test_phases_never_add_up_to_more_gpu_time_than_the_step():
    """On the H100 (torch 2.11) a plain profile's phases read 0.167 + 0.273 ms against a
    0.421 ms step. Each GPU event now counts once, for the label whose range held its launch: a
    kernel launched in the forward pass and run while the backward pass was labelled is the
    forward's; a wait on the GPU lane is nobody's; an overhead event sharing an operator's id
    takes nothing; a kernel with no runtime call recorded goes by its operator."""
    prof = _RecordedGpuProfile()
    gpu = profiling.phase_times(prof, PHASES3, 1, "cuda")["GPU kernel time"]
    assert gpu == pytest.approx({"model: forward + loss": 0.087, "model: backward": 0.1,
                                 "model: optimizer step": 0.01, profiling.STEP: 0.202})
    assert sum(gpu[n] for n in PHASES3) <= gpu[profiling.STEP]
    # a label around others: its nested labels keep their kernels, the outer one gets the rest
    prof.raw.append(_Raw("train", 90, 700, activity="user_annotation", corr=10))
    nested = profiling.phase_times(prof, ["train", *PHASES3], 1, "cuda")["GPU kernel time"]
    assert nested["train"] == pytest.approx(0.0) and nested["model: backward"] == pytest.approx(0.1)
    prof.raw.append(_Raw("setup", 0, 900, activity="user_annotation", corr=11))
    nested = profiling.phase_times(prof, ["setup", "train", *PHASES3], 1, "cuda")["GPU kernel time"]
    assert nested["setup"] == pytest.approx(0.005) and sum(nested[n] for n in ["setup", "train", *PHASES3]) \
        == pytest.approx(nested[profiling.STEP])


def test_python_caller_finds_the_line_by_time_when_the_event_tree_has_no_frames():
    """On the H100 (torch 2.11, CUDA activity) every operator read "(no Python frame recorded)": no
    frame among its parents and an empty ``stack``. The frames recorded beside it, running while
    it ran, still name the line; here the tree is cut by hand, on a CPU profile."""
    from types import SimpleNamespace

    prof = _profiled_steps(1, waiting_thread=True)
    _skip_where_no_frame_is_recorded(prof)
    frames = profiling.PythonFrames(prof)
    assert len({f.thread for f in frames.frames}) >= 2, "the helper's waits are recorded too"
    ops = profiling.ops_inside(prof, "data: next(loader)")
    assert frames.frames and ops
    cut = [SimpleNamespace(name=e.name, cpu_parent=None, stack=[], thread=e.thread, time_range=e.time_range) for e in ops]
    assert {profiling.python_caller(e) for e in cut} == {profiling.NO_FRAME}
    by_time = [profiling.python_caller(e, frames) for e in cut]
    assert by_time == [profiling.python_caller(e) for e in ops]       # the same lines the event tree gives
    assert any(c.startswith("profiling.py:") and c.endswith("augment_one") for c in by_time), set(by_time)
    elsewhere = [SimpleNamespace(**{**vars(e), "thread": -7}) for e in cut]   # a thread with no frame recorded
    assert {profiling.python_caller(e, frames) for e in elsewhere} == {profiling.NO_FRAME}


def test_folded_text_shows_only_its_caption_until_opened():
    """A full profiler table or a function's source: the caption is all a learner sees before a click."""
    from utils.lesson_shape import _VisibleText

    for folded in (Folded("Name  Self CPU\naten::mm  1.2ms <x>", "Full table"),
                   Folded("def f(x):\n    return x + 1\n", "Per-sample code", language="python")):
        page = folded._repr_html_()
        assert page.startswith(f"<details><summary>{folded.caption}</summary>") and page.endswith("</details>")
        seen = _VisibleText()
        seen.feed(page)
        assert seen.words == folded.caption.split() and not seen.table_widths
        assert repr(folded) == f"{folded.caption}\n{folded.text}"
    assert "&lt;x&gt;" in Folded("<x>", "t")._repr_html_()


def test_overlapping_kernels_count_once_in_the_step_and_in_its_phases():
    """The step's GPU time is the busy time bench measures (overlaps once), and each kernel's phase
    gets only what it adds beyond the kernels it overlaps: the phases still add up to the step."""
    prof = _RecordedGpuProfile()
    # a second-stream kernel, launched in the optimizer step, running under the backward's 470-550
    prof.raw += _launch(8, 9010, 630, 540, 40)
    gpu = profiling.phase_times(prof, PHASES3, 1, "cuda")["GPU kernel time"]
    assert gpu[profiling.STEP] == pytest.approx(0.202 + 0.010)     # only 570-580 is new busy time
    assert gpu[profiling.STEP] == pytest.approx(profiling.gpu_ms_per_step(prof, 1))
    assert sum(gpu[n] for n in PHASES3) == pytest.approx(gpu[profiling.STEP] - 0.005)  # the copy: no label
