"""The recipe card: a generated headline, the outcome's explanation, a compact table, the rest folded."""
import html
import re
import time

import pytest
import torch

from utils import bench, lesson_shape, present, trace, why
from utils.units import first_sentence_words
from utils.comparison import Demo, Sweep, Timing
from utils.present import Result, SweepResult, Unmeasured

MS = 1e-3


def timing(label, median, iqr=0.02 * MS, peak=None, rounds=None, device_s=None):
    return Timing(label, median, iqr, 30, peak, "m" if peak is not None else None, {},
                  rounds or [median] * 3, device_s)


SPEC = {"cpu": {"n": 4}, "cpu-quick": {"n": 4}, "gpu": {"n": 64}}


def card(*rows, device="cpu", tip="T900", **kw):
    return Result(tip, "a demo", device, "Test CPU" if device == "cpu" else "Test GPU", {"n": 4}, list(rows),
                  sizes_spec=SPEC, **kw)


@pytest.fixture
def tables(tmp_path, monkeypatch):
    """A why table for T900 in a folder of its own."""
    (tmp_path / "99_test.toml").write_text(
        '[T900]\ncpu.faster = "Faster on a CPU: {ratio} at n={n}."\ncpu.same = "No gain on a CPU."\n'
        'gpu.faster = "Faster on a GPU: {variant_gpu} of kernels."\nany.otherwise = "Unexpected."\n'
        'cpu.note = "On a GPU it would copy {gpu_sizes}."\ncpu.unmeasured = "A GPU would show the copy ({extra})."\n'
        'cpu.less_memory = "Less held: {variant_peak} against {baseline_peak}."\n')
    monkeypatch.setattr(why, "FOLDER", tmp_path)


@pytest.mark.parametrize("rows,headline", [
    ((timing("base", 2 * MS), timing("tip", 1 * MS)), "tip: 2.00x as fast as base on Test CPU (2 ms → 1 ms)."),
    ((timing("base", 1 * MS), timing("tip", 3 * MS)), "tip: 3.00x the time of base on Test CPU (1 ms → 3 ms)."),
    ((timing("base", 1 * MS, iqr=0.5 * MS), timing("tip", 1.01 * MS, iqr=0.5 * MS)),
     "tip: no clear difference from base on Test CPU (1 ms → 1.01 ms)."),
])
def test_the_headline_is_generated_from_the_verdict(rows, headline):
    assert card(*rows).headline() == headline


def test_a_launch_bound_gpu_comparison_gets_no_speed_in_its_headline():
    c = card(timing("base", 400e-6, device_s=10e-6), timing("tip", 200e-6, device_s=10e-6), device="cuda:0")
    assert "launch-bound, so no verdict" in c.headline() and "as fast" not in c.headline()


def test_the_explanation_is_chosen_by_device_and_outcome_and_filled_in(tables):
    faster = card(timing("base", 2 * MS), timing("tip", 1 * MS))
    assert faster.explanation() == ["Faster on a CPU: 2.00x at n=4.", "On a GPU it would copy n=64."]
    without_spec = Result.of(faster)
    without_spec.sizes_spec = None  # plain dict sizes: no other device's sizes to name
    with pytest.raises(ValueError, match=r"asks for \['gpu_sizes'\]"):
        without_spec.explanation()
    same = card(timing("base", 1 * MS, iqr=0.5 * MS), timing("tip", 1 * MS, iqr=0.5 * MS))
    assert same.explanation()[0] == "No gain on a CPU."
    slower = card(timing("base", 1 * MS), timing("tip", 2 * MS))
    assert slower.explanation()[0] == "Unexpected."  # no sentence of its own: "otherwise"
    gpu = card(timing("base", 2 * MS, device_s=1.9 * MS), timing("tip", 1 * MS, device_s=0.95 * MS), device="cuda")
    assert gpu.explanation() == ["Faster on a GPU: 950 µs of kernels."]


def test_a_sentence_naming_a_figure_the_comparison_lacks_is_an_error(tmp_path, monkeypatch):
    (tmp_path / "99_test.toml").write_text('[T900]\nany.faster = "{missing_figure}"\n')
    monkeypatch.setattr(why, "FOLDER", tmp_path)
    with pytest.raises(ValueError, match=r"asks for \['missing_figure'\]"):
        card(timing("base", 2 * MS), timing("tip", 1 * MS)).explanation()


def test_the_card_shows_headline_explanation_and_compact_table_and_folds_the_rest(tables):
    c = card(timing("base", 2 * MS, peak=1000), timing("tip", 1 * MS, peak=1000))
    page = c._repr_html_()
    visible, folded = page.split("<details>")
    assert html.escape(c.headline()) in visible and "Faster on a CPU" in visible
    assert "IQR" not in visible and "peak memory" not in visible  # same peaks: no column to read
    assert "IQR" in folded and "peak memory" in folded and 'data-plot="bars"' in folded
    assert "interleaved round" in folded  # the method, on demand


def test_a_card_is_short(tables):
    """The recipe-card target: about 120 visible words for a three-variant comparison."""
    c = card(timing("torch.ones on the CPU, then .to(dev)", 2 * MS), timing("torch.ones(..., device=dev)", 1 * MS),
             timing("np.ones, then torch.tensor(...).to(dev)", 3 * MS))
    parser = lesson_shape._VisibleText()
    parser.feed(c._repr_html_())
    assert parser.cards == 1 and len(parser.words) <= 120, " ".join(parser.words)


MIB = 2**20


def test_a_memory_tip_leads_with_memory_and_is_explained_by_its_memory_verdict(tables):
    c = card(timing("keep loss", 1 * MS, peak=136 * MIB), timing("loss.item()", 1.01 * MS, peak=24 * MIB),
             metric="memory")
    assert c.headline() == ("loss.item(): peak memory 24.0 MiB, against 136.0 MiB for keep loss; "
                            "time: no clear difference.")
    assert c.explanation()[0] == "Less held: 24.0 MiB against 136.0 MiB."
    compact = c.table_rows(compact=True)
    assert list(compact[1])[:2] == ["variant", "peak memory"] and compact[1]["verdict"] == "18% of the baseline's peak"
    noisy = card(timing("keep loss", 1 * MS, iqr=0.5 * MS, peak=136 * MIB),
                 timing("loss.item()", 0.7 * MS, iqr=0.5 * MS, peak=24 * MIB), metric="memory")
    assert noisy.headline().endswith("; time: no clear difference.")   # the overlap's ratio: in the table
    timed = card(timing("keep loss", 1 * MS, peak=136 * MIB), timing("loss.item()", 1.01 * MS, peak=24 * MIB))
    assert timed.headline().startswith("loss.item(): no clear difference")  # the default metric is time


def test_a_tip_about_another_figure_leads_with_it():
    base, tip = timing("level 6", 1 * MS), timing("level 9", 3 * MS)
    base.extra["bytes"], tip.extra["bytes"] = "1,200", "1,150"
    assert card(base, tip, metric="bytes").headline() == "level 9: bytes 1,150, against 1,200 for level 6; time: 3.00x the time."


def test_compare_refuses_a_metric_it_cannot_show(quick_bench):
    with pytest.raises(ValueError, match="give no such figure"):
        bench.compare("T900", ("a", lambda: 1), ("b", lambda: 2), options=bench.Options(metric="error", record=False))
    with pytest.raises(ValueError, match="needs the peak memory"):
        bench.Options(metric="memory", memory=False, record=False)


@pytest.mark.parametrize("fast", [True, False])
def test_a_headline_keeps_to_twenty_words_whatever_the_labels(fast):
    long_base, long_tip = "cudnn.benchmark = False (the heuristic pick)", "cudnn.benchmark = True (autotuned, searched once)"
    rows = (timing(long_base, 2 * MS), timing(long_tip, 1 * MS if fast else 3 * MS))
    c = Result("T900", "demo", "cuda:0", "NVIDIA H100 80GB HBM3", {}, list(rows))
    head = c.headline()
    assert first_sentence_words(head) <= present.HEADLINE_WORDS and head.startswith(long_tip), head
    assert ("2.00x as fast" if fast else "1.50x the time") in head and "NVIDIA H100" in head


def test_a_very_long_label_keeps_its_verdict_and_drops_the_device():
    label = "one two three four five six seven eight nine ten eleven twelve thirteen"
    longer = Result("T900", "demo", "cuda:0", "NVIDIA H100 80GB HBM3", {}, [timing("b", 2 * MS), timing(label, 1 * MS)])
    assert longer.headline() == f"{label}: 2.00x as fast as the baseline."


def test_the_headline_is_marked_for_the_lesson_figures(tables):
    c = card(timing("base", 2 * MS), timing("tip", 1 * MS))
    parser = lesson_shape._VisibleText()
    parser.feed(c._repr_html_())
    assert parser.headlines == [c.headline()]


def test_reference_runs_that_agree_with_this_run_are_folded(tables, monkeypatch):
    here = card(timing("base", 2 * MS), timing("tip", 1 * MS))
    agrees = card(timing("base", 4 * MS), timing("tip", 1 * MS), device="cuda")
    differs = card(timing("base", 1 * MS), timing("tip", 1 * MS), device="cuda")
    differs.device_name = "Other GPU"

    class Run:
        name, manifest = "ref", {"date": "2026-11-28"}

        def describe(self, device_name):
            return device_name
    monkeypatch.setattr(present.references, "matching", lambda demo: [(Run(), agrees), (Run(), differs)])
    assert here.references_differing() == ["On Other GPU (reference run ref): no clear difference."]
    visible, folded = here._repr_html_().split("<details>")
    assert "Other GPU (reference run ref)" in visible and "Test GPU (reference run ref)" not in visible
    assert "Test GPU" in folded  # the reference table keeps every run


def test_peak_memory_shows_when_it_differs():
    c = card(timing("base", 2 * MS, peak=4000), timing("tip", 1 * MS, peak=1000))
    assert "peak memory" in c._repr_html_().split("<details>")[0]


def test_ratios_have_three_significant_figures():
    c = card(timing("base", 594.79 * MS), timing("tip", 1 * MS))
    assert "595x as fast" in c.headline()


def test_an_unmeasured_demo_says_what_it_needs_and_invents_nothing(tables):
    demo = Demo("T900", "a demo", ["base", "tip"], {"n": 4}, {"gpu": {"n": 64}, "cpu": {"n": 4}, "cpu-quick": {"n": 4}})
    shown = Unmeasured(demo, "Test CPU", "cpu", "cuda", facts={"extra": "64 MiB"}, featured="tip")
    text = repr(shown)
    assert "not measured: this demo needs a CUDA GPU, and this run is on Test CPU." in text
    assert "A GPU would show the copy (64 MiB)." in text
    assert not re.search(r"\d+(\.\d+)?x", text)  # no ratio: nothing was measured


def test_compare_with_needs_times_nothing_on_another_device(tables, quick_bench, records_file):
    def fail():
        raise AssertionError("a demo that needs CUDA must not run on the CPU")
    shown = bench.compare("T900", ("base", fail), ("tip", fail),
                          options=bench.Options(title="a demo", device="cpu", needs="cuda"))
    assert isinstance(shown, Unmeasured) and not records_file.exists()
    with pytest.raises(ValueError, match="needs must be one of"):
        bench.Options(device="cpu", needs="tpu")


def test_a_sweep_shows_its_ratios_by_size_and_draws_curves(tables, quick_bench):
    work = {n: torch.rand(n) for n in (1_000, 100_000)}
    sweep = bench.sweep("T900", "n", [1_000, 100_000], lambda n: [("sum twice", lambda: work[n].sum() + work[n].sum()),
                                                                  ("sum once", lambda: work[n].sum())],
                        rate=("Melem/s", lambda n: n / 1e6),
                        options=bench.Options(title="a demo", device="cpu", record=False, why="T900-sweep"))
    assert isinstance(sweep, SweepResult) and len(sweep.comparisons) == 2
    assert sweep.headline().startswith("sum once on CPU") and "at 1000" in sweep.headline()
    page = sweep._repr_html_()
    assert 'data-plot="sweep"' in page and "Melem/s" in page


def test_a_timeline_draws_a_typical_call_not_an_outlier():
    x, calls = torch.rand(64, 64), []

    def sometimes_slow():        # calls 3 and 6 sleep: 2 of the 5 profiled ones (1: warm-up, 2: profiled warm-up)
        calls.append(None)
        if len(calls) % 3 == 0:
            with torch.profiler.record_function("slow"):
                time.sleep(0.5)
        return x @ x
    shown = bench.timeline("T900", ("v", sometimes_slow), title="t", device="cpu")
    assert len(calls) == 2 + trace.CALLS
    assert "slow" not in {s.name for s in shown.spans} and max(s.end for s in shown.spans) < 0.25, shown.spans


def test_a_timeline_has_a_cpu_lane_for_each_variant(quick_bench):
    x = torch.rand(256, 256)
    shown = bench.timeline("T900", ("one", lambda: x @ x), ("two", lambda: (x @ x) @ x), title="t", device="cpu")
    assert {(s.variant, s.lane) for s in shown.spans} == {("one", "CPU"), ("two", "CPU")}
    assert all(0 <= s.start <= s.end for s in shown.spans)
    assert 'data-plot="timeline"' in shown._repr_html_()


def test_a_stored_comparison_renders_without_facts_or_explanation():
    stored = Result.of(card(timing("base", 2 * MS), timing("tip", 1 * MS)))
    assert stored.to_html(stored=True).count("<p>") == 1  # the headline only


def test_source_names_are_learner_words():
    assert present.source_name("000#2") == "source write-up 000 (item 2)"
    assert present.source_name("003") == "source write-up 003"


def test_sweep_needs_two_values():
    with pytest.raises(ValueError, match="at least two values"):
        bench.sweep("T900", "n", [1], lambda n: [], options=bench.Options(title="t"))
    assert isinstance(SweepResult("T900", "t", "n", [], []), Sweep)


def test_a_memory_headline_for_a_label_too_long_for_twenty_words_names_the_figures():
    label = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen"
    c = card(timing("b", 1 * MS, peak=136 * MIB), timing(label, 1 * MS, peak=24 * MIB), metric="memory")
    assert c.headline() == "peak memory 24.0 MiB, against the baseline's 136.0 MiB."
