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


def _profiled_steps(steps=2):
    from torch.profiler import ProfilerActivity, profile, record_function, schedule

    images = _images(4)
    dataset = profiling.PerSampleImages(images, torch.arange(4))
    with profile(activities=[ProfilerActivity.CPU], with_stack=True,
                 schedule=schedule(wait=0, warmup=1, active=steps, repeat=1)) as prof:
        for _ in range(1 + steps):
            with record_function("data: next(loader)"):
                torch.stack([dataset[i][0] for i in range(4)])
            with record_function("model: forward + loss"):
                torch.ones(64, 64).matmul(torch.ones(64, 64))
            prof.step()
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
    callers = {profiling.python_caller(e) for e in ops}
    assert any(c.startswith("profiling.py:") and c.endswith("augment_one") for c in callers), callers
    assert profiling.top_self_operator(prof.key_averages()).key.startswith("aten::")
    occurrences = profiling.occurrences_ms(prof, "model: forward + loss")
    assert occurrences == pytest.approx([e.cpu_time_total / 1e3 for e in profiling.label_events(
        prof, "model: forward + loss")], abs=2e-3) and len(occurrences) == 2, "the event tree's durations, in order"


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


def _event(name, start, end, device=profiling.CPU, kernels=(), annotation=False, activity=""):
    from types import SimpleNamespace

    from torch.autograd.profiler_util import Interval, Kernel

    return SimpleNamespace(name=name, time_range=Interval(start, end), device_type=device, is_user_annotation=annotation,
                           activity_type=activity, kernels=[Kernel(f"k{i}", 0, d) for i, d in enumerate(kernels)])


class _RecordedGpuProfile:
    """A finished CUDA profile of one training step, as ``prof.events()`` and ``prof.key_averages()``
    give it (times in µs): the shape the H100 run profiled, on a machine without a GPU."""

    def __init__(self):
        from types import SimpleNamespace

        cuda = torch.autograd.DeviceType.CUDA
        self._events = [
            _event("ProfilerStep#1", 0, 1000),
            _event("model: forward + loss", 100, 400), _event("aten::conv2d", 120, 200, kernels=[50]),
            _event("model: backward", 400, 600),
            _event("aten::convolution_backward", 450, 550, kernels=[80, 20]),  # autograd's thread: not the label's child
            _event("model: optimizer step", 600, 700), _event("aten::_foreach_add_", 610, 650, kernels=[10]),
            _event("aten::copy_", 800, 820, kernels=[5]),                     # outside every label
            *[_event(f"kernel {d}", 0, d, device=cuda) for d in (50, 80, 20, 10)],
            _event("Memcpy HtoD", 0, 5, device=cuda, activity="gpu_memcpy"),
            _event("model: forward + loss", 100, 500, device=cuda, annotation=True, activity="gpu_user_annotation"),
            _event("ProfilerStep#1", 100, 1100, device=cuda, annotation=True, activity="gpu_user_annotation"),
            _event("[memory]", 0, 0, device=cuda),
        ]
        self._averages = [SimpleNamespace(key=key, device_type=profiling.CPU, cpu_time_total=t)
                          for key, t in (("ProfilerStep*", 1000), ("model: forward + loss", 300),
                                         ("model: backward", 200), ("model: optimizer step", 100))]

    def events(self):
        return self._events

    def key_averages(self):
        return self._averages


def test_a_steps_gpu_time_counts_every_kernel_and_no_label_twice():
    """The H100 run said 'The GPU ran kernels for 1.84 ms per step' from the labels alone (the
    backward kernels, launched from autograd's thread, belong to no label), and 1.84 ms before,
    1.64 ms after under a card whose GPU time rose from 6.40 to 8.61 ms."""
    prof = _RecordedGpuProfile()
    assert profiling.gpu_ms_per_step(prof, 1) == pytest.approx(0.165)   # 50 + 80 + 20 + 10 µs kernels, a 5 µs copy
    assert profiling.gpu_ms_per_step(prof, 2) == pytest.approx(0.0825)
    times = profiling.phase_times(prof, ["model: forward + loss", "model: backward", "model: optimizer step"], 1, "cuda")
    assert times["GPU kernel time"] == pytest.approx({"model: forward + loss": 0.05, "model: backward": 0.1,
                                                      "model: optimizer step": 0.01, profiling.STEP: 0.165})
    assert times["CPU time"][profiling.STEP] == 1.0
    assert sum(times["GPU kernel time"].values()) - times["GPU kernel time"][profiling.STEP] <= 0.165


def test_python_caller_finds_the_line_by_time_when_the_event_tree_has_no_frames():
    """On the H100 (torch 2.11, CUDA activity) every operator read "(no Python frame recorded)": no
    frame among its parents and an empty ``stack``. The frames recorded beside it, running while
    it ran, still name the line; here the tree is cut by hand, on a CPU profile."""
    from types import SimpleNamespace

    prof = _profiled_steps(1)
    frames = profiling.PythonFrames(prof)
    ops = profiling.ops_inside(prof, "data: next(loader)")
    assert frames.frames and ops
    cut = [SimpleNamespace(name=e.name, cpu_parent=None, stack=[], thread=e.thread, time_range=e.time_range) for e in ops]
    assert {profiling.python_caller(e) for e in cut} == {profiling.NO_FRAME}
    by_time = [profiling.python_caller(e, frames) for e in cut]
    assert by_time == [profiling.python_caller(e) for e in ops]       # the same lines the event tree gives
    assert any(c.startswith("profiling.py:") and c.endswith("augment_one") for c in by_time), set(by_time)
    elsewhere = [SimpleNamespace(**{**vars(e), "thread": -7}) for e in cut]   # frames recorded under another thread id
    assert [profiling.python_caller(e, frames) for e in elsewhere] == by_time


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
