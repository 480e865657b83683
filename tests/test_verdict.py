"""utils.verdict: the words under every comparison come from the numbers, by these rules."""
import pytest
import torch

from utils import bench, trace
from utils.comparison import Timing
from utils.present import Result

MS = 1e-3


def row(label, median, iqr=0.02 * MS, rounds=None, device_s=None, peak=None):
    rounds = [median] * 3 if rounds is None else rounds
    return Timing(label, median, iqr, 30, peak, "m" if peak is not None else None, {}, rounds, device_s)


def comparison(*rows, device="cpu", about_overhead=False):
    return Result("T000", "demo", device, "dev", {}, list(rows), about_overhead=about_overhead)


def test_a_clear_consistent_gap_is_faster_or_slower():
    c = comparison(row("base", 2 * MS), row("tip", 1 * MS), row("worse", 4 * MS))
    assert c.verdict("base").kind == "baseline"
    assert c.verdict("tip").kind == "faster" and c.verdict("tip").text == "2.00x as fast"
    assert c.verdict("worse").kind == "slower" and "2.00x the time" in c.verdict("worse").text


def test_a_gap_within_the_iqr_is_no_clear_difference():
    c = comparison(row("base", 2.0 * MS, iqr=0.3 * MS), row("tip", 1.85 * MS, iqr=0.1 * MS))
    assert c.verdict("tip").kind == "no clear difference"
    assert c.verdict("tip").text == "no clear difference (1.08x as fast, runs overlap)"  # the ratio, and why
    assert "middle halves of the runs overlap" in c.verdict("tip").note


def test_a_gap_under_one_percent_is_no_clear_difference_however_tight():
    c = comparison(row("base", 1.000 * MS, iqr=1e-9), row("tip", 0.996 * MS, iqr=1e-9))
    v = c.verdict("tip")
    assert v.kind == "no clear difference" and "under 1% apart" in v.note


def test_rounds_that_disagree_earn_no_direction():
    # The pooled medians differ clearly, but in one round the variant was the slower one.
    c = comparison(row("base", 2 * MS, rounds=[2 * MS, 2 * MS, 1.0 * MS]),
                   row("tip", 1 * MS, rounds=[1 * MS, 1 * MS, 1.5 * MS]))
    v = c.verdict("tip")
    assert v.kind == "no clear difference" and "rounds disagree" in str(v)


def test_a_single_round_never_claims_more_than_the_iqr():
    c = comparison(row("base", 2 * MS, rounds=[2 * MS]), row("tip", 1 * MS, rounds=[1 * MS]))
    assert c.verdict("tip").kind == "one round"
    assert "rerun in full mode" in str(c.verdict("tip"))
    assert "rerun in full mode for a verdict" in c.headline()


def test_noise_is_called_out():
    c = comparison(row("base", 2 * MS, iqr=1.5 * MS), row("tip", 0.2 * MS))
    assert "noisy" in c.verdict("tip").note


# ---- the GPU rule (utils.verdict's docstring, docs/verdicts.md), one step per test

def test_under_a_tenth_of_a_millisecond_of_gpu_work_everywhere_is_launch_bound_with_no_verdict():
    tiny = comparison(row("base", 60e-6, device_s=50e-6), row("tip", 30e-6, device_s=50e-6), device="cuda")
    v = tiny.verdict("tip")
    assert "under 100 µs" in tiny.launch_bound() and v.kind == "launch-bound" and v.ratio is None
    assert "Python and kernel launches" in str(v)
    assert tiny.headline() == "tip against base on dev: launch-bound, so no verdict; GPU work unchanged (50 µs → 50 µs)."


def test_a_row_is_host_bound_when_its_gpu_idles_or_does_under_a_millisecond_and_the_label_is_per_row():
    from utils.verdict import host_bound_reason
    c = comparison(row("idle", 10 * MS, device_s=2 * MS), row("small", 0.5 * MS, device_s=0.45 * MS),
                   row("busy", 3 * MS, device_s=2.9 * MS), device="cuda")
    assert "busy for 20% of its 10 ms" in host_bound_reason(c, c.row("idle"))
    assert "450 µs of GPU work a call, under 1 ms" in host_bound_reason(c, c.row("small"))   # busy, but small
    assert host_bound_reason(c, c.row("busy")) is None
    assert host_bound_reason(comparison(row("cpu", 10 * MS), row("b", MS)), row("cpu", 10 * MS)) is None


def test_a_host_bound_pair_is_judged_on_gpu_time_and_says_what_the_wall_clock_said():
    c = comparison(row("base", 10 * MS, device_s=2 * MS), row("tip", 5 * MS, device_s=2 * MS), device="cuda")
    v = c.verdict("tip")   # the wall clock halved, the GPU work did not move: no GPU verdict either way
    assert (v.kind, v.clock, v.text) == ("no clear difference", "GPU", "host-bound: no clear difference in GPU time")
    assert "the wall clock says faster (2.00x as fast)" in v.note and "busy for 20%" in v.note
    faster = comparison(row("base", 10 * MS, device_s=4 * MS), row("tip", 5 * MS, device_s=1 * MS), device="cuda")
    v = faster.verdict("tip")
    assert (v.kind, v.text, v.ratio) == ("faster", "host-bound: 4.00x as fast in GPU time", 4.0)
    assert "the wall clock agrees (2.00x as fast)" in v.note
    assert faster.headline() == "tip: 4.00x as fast in GPU time against base on dev (4 ms → 1 ms of GPU work), host-bound."


def test_busy_rows_whose_clocks_disagree_are_judged_on_gpu_time():
    # float32 against float64 on the H100 (07 T091, full): the wall clock said slower, the GPU work fell
    c = comparison(row("float64", 1.49 * MS, device_s=1.35 * MS), row("float32", 1.78 * MS, device_s=1.19 * MS),
                   device="cuda")
    v = c.verdict("float32")
    assert (v.kind, v.clock, v.text) == ("faster", "GPU", "1.13x as fast in GPU time")
    assert "the wall clock says slower (1.19x the time), a difference in host time" in v.note


def test_busy_rows_whose_clocks_agree_keep_the_wall_clock_verdict():
    c = comparison(row("base", 4 * MS, device_s=3.9 * MS), row("tip", 2 * MS, device_s=1.95 * MS), device="cuda")
    v = c.verdict("tip")
    assert (v.kind, v.clock, v.text, v.note) == ("faster", "wall", "2.00x as fast", "")


def test_gpu_times_within_five_percent_are_no_clear_difference():
    # torch.compile in 11 T104: 2.24 → 2.14 ms of GPU work, the wall clock 1.04x in one mode and not in the other
    c = comparison(row("eager", 2.33 * MS, device_s=2.24 * MS), row("compiled", 2.24 * MS, device_s=2.14 * MS),
                   device="cuda")
    v = c.verdict("compiled")
    assert (v.kind, v.clock) == ("no clear difference", "GPU") and "under 5% apart" not in v.text
    assert "GPU work fell 1.05x (2.24 ms → 2.14 ms)" in v.note


def test_a_tip_about_host_time_keeps_the_wall_clock_and_its_host_bound_label():
    rows = (row("base", 10 * MS, device_s=2 * MS), row("tip", 5 * MS, device_s=2 * MS))
    v = comparison(*rows, device="cuda", about_overhead=True).verdict("tip")
    assert (v.kind, v.clock, v.text) == ("faster", "wall", "host-bound: 2.00x as fast")
    assert "busy for 20% of its 10 ms" in v.note and "GPU work unchanged" in v.note


def test_a_variant_with_no_gpu_work_is_faster_in_gpu_time_and_one_without_a_profile_keeps_the_wall_clock():
    c = comparison(row("repeat", 2 * MS, device_s=1.9 * MS), row("expand", 10e-6, device_s=0.0), device="cuda")
    assert c.verdict("expand").text == "host-bound: no GPU work at all" and c.verdict("expand").kind == "faster"
    c = comparison(row("repeat", 2 * MS, device_s=1.9 * MS), row("expand", 10e-6, device_s=None), device="cuda")
    assert c.launch_bound() is None and (c.verdict("expand").kind, c.verdict("expand").clock) == ("faster", "wall")


def test_a_claim_is_judged_on_the_clock_of_its_verdict():
    from utils import claims
    claim = claims.Claim("C999", "T000", "000", "the tip is faster", "time", 1.5, 5.0)
    host = comparison(row("base", 10 * MS, device_s=4 * MS), row("tip", 5 * MS, device_s=1 * MS), device="cuda")
    assert claims.judge(claim, host, host.row("tip")) == (4.0, claims.REPRODUCED, "")   # the wall clock: 2.00x
    disagree = comparison(row("base", 1.49 * MS, device_s=1.35 * MS), row("tip", 1.78 * MS, device_s=1.19 * MS),
                          device="cuda")
    factor, verdict, why = claims.judge(claim, disagree, disagree.row("tip"))
    assert verdict == claims.NOT_REPRODUCED and factor == pytest.approx(1.35 / 1.19) and "smaller than claimed" in why


def test_the_cpu_is_never_launch_bound():
    c = comparison(row("base", 40e-6, iqr=1e-6), row("tip", 20e-6, iqr=1e-6))
    assert c.launch_bound() is None and c.verdict("tip").kind == "faster"


def test_memory_verdicts():
    c = comparison(row("base", MS, peak=1000), row("half", MS, peak=500), row("same", MS, peak=1020),
                   row("more", MS, peak=3000))
    sentences = c.summary()
    assert "50% of the baseline's peak memory" in sentences
    assert "same peak memory" in sentences and "300% of the baseline's peak memory" in sentences


def test_table_has_a_verdict_column_and_the_note_says_what_memory_counts(quick_bench):
    x = torch.rand(128, 128)
    c = bench.compare("T000", ("three", lambda: x @ x @ x), ("one", lambda: x @ x), options=bench.Options(record=False))
    assert [r["verdict"] for r in c.table_rows()][0] == "baseline"
    assert "2 interleaved rounds" in c.footnote() and "torch.profiler" in c.footnote()
    assert len(c.baseline.round_medians) == 2 and c.baseline.device_s is None


def test_a_real_gap_is_found_faster_in_quick_mode(quick_bench):
    # 400x less work, and below ATen's parallel grain (32k elements) so a loaded machine cannot
    # make it wait for a second thread: the verdict must say "faster", from two interleaved rounds.
    big, small = torch.rand(4_000_000), torch.rand(10_000)
    c = bench.compare("T000", ("100x the work", lambda: big.sum()), ("less work", lambda: small.sum()),
                      options=bench.Options(memory=False, record=False))
    assert c.verdict("less work").kind == "faster", c


def test_sizes_pick_the_device_and_mode():
    spec = dict(cpu=dict(n=512), quick=dict(n=128), gpu=dict(n=4096))
    bench.configure(True)
    try:
        assert bench.sizes("cpu", **spec) == {"n": 128}
        assert bench.sizes(torch.device("cuda"), **spec) == {"n": 4096}  # QUICK keeps GPU sizes
    finally:
        bench.configure(False)
    assert bench.sizes("cpu", **spec) == {"n": 512}
    assert bench.sizes("meta", cpu=dict(n=1)) == {"n": 1}
    assert bench.sizes("cpu", **spec).spec == {"cpu": {"n": 512}, "cpu-quick": {"n": 128}, "gpu": {"n": 4096}}
    with pytest.raises(ValueError, match="same keys"):
        bench.sizes("cpu", cpu=dict(n=1), gpu=dict(m=2))


def test_a_heavy_tail_does_not_hide_a_clear_gap():
    # A busy machine: the baseline's IQR is far larger than its median, but the two middle halves
    # are still far apart, in every round.
    base = Timing("base", 0.5 * MS, 11 * MS, 20, None, None, {}, [0.7 * MS, 0.4 * MS], None, 0.3 * MS, 11.3 * MS)
    tip = Timing("tip", 3e-6, 1e-6, 60, None, None, {}, [4e-6, 3e-6], None, 2.5e-6, 3.5e-6)
    c = comparison(base, tip)
    assert c.verdict("tip").kind == "faster" and "noisy" in c.verdict("tip").note


# ---------------------------------------------------------------- each variant on its own numbers

def test_each_variant_is_judged_on_its_own_pair():
    # The slowest variant is host-bound; it changes nothing for the busy one.
    c = comparison(row("base", 4 * MS, device_s=3.8 * MS), row("busy", 2 * MS, device_s=1.9 * MS),
                   row("idle", 8 * MS, device_s=1 * MS), device="cuda")
    assert c.verdict("busy").text == "2.00x as fast" and c.verdict("busy").clock == "wall"
    idle = c.verdict("idle")
    assert (idle.kind, idle.text) == ("faster", "host-bound: 3.80x as fast in GPU time")
    assert "busy for 12% of its 8 ms" in idle.note and "the wall clock says slower (2.00x the time)" in idle.note
    assert c.launch_bound() is None  # the comparison as a whole does not time launches


def test_a_host_bound_variant_with_less_gpu_work_and_a_slower_wall_clock_is_faster_in_gpu_time():
    # T088's shape on the H100 (11-25): the GPU work fell, the wall clock rose, because the host sets the pace.
    c = comparison(row("float32", 6 * MS, device_s=5 * MS), row("float16", 7.5 * MS, device_s=1.25 * MS), device="cuda")
    v = c.verdict("float16")
    assert v.text == "host-bound: 4.00x as fast in GPU time" and v.clock == "GPU"
    assert "the wall clock says slower (1.25x the time)" in v.note and "busy for 17% of its 7.5 ms" in v.note
    assert c.headline() == "float16: 4.00x as fast in GPU time against float32 on dev (5 ms → 1.25 ms of GPU work), host-bound."


def test_a_host_bound_tip_about_overhead_keeps_its_wall_clock_ratio_and_the_gpu_change_in_its_note():
    t069 = comparison(row("batch 512", 48 * MS, device_s=7 * MS), row("batch 1024", 24 * MS, device_s=4.84 * MS),
                      device="cuda", about_overhead=True)
    v = t069.verdict("batch 1024")
    assert v.text == "host-bound: 2.00x as fast" and "GPU work fell 1.45x (7 ms → 4.84 ms)" in v.note
    assert t069.headline() == "batch 1024: 2.00x as fast as batch 512 on dev (48 ms → 24 ms), host-bound."


def test_a_cpu_baseline_beside_a_gpu_variant_is_judged_on_the_wall_clock():
    c = comparison(row("CPU", 30 * MS), row("GPU", 1.5 * MS, device_s=0.3 * MS), device="cuda:0")
    assert c.verdict("GPU").text == "20.0x as fast" and c.launch_bound() is None


def test_under_one_percent_no_text_prints_a_ratio():
    one_round = comparison(row("base", 1.000 * MS, iqr=1e-9, rounds=[1 * MS]),
                           row("tip", 0.995 * MS, iqr=1e-9, rounds=[0.995 * MS]))
    v = one_round.verdict("tip")
    assert v.kind == "no clear difference" and "1.00x" not in str(v) and "1.00x" not in one_round.headline()
    from utils.present import SweepResult
    sweep = SweepResult("T000", "demo", "n", [1, 2], [comparison(row("b", 1 * MS), row("t", 0.996 * MS)),
                                                      comparison(row("b", 2 * MS), row("t", 1 * MS))])
    assert sweep.headline() == "t against b on dev, by n: no clear difference at 1, 2.00x as fast at 2."


def test_a_sweep_headline_gives_a_ratio_only_where_its_point_has_a_verdict():
    from utils.present import SweepResult
    points = [comparison(row("b", 0.2 * MS, device_s=0.01 * MS), row("t", 0.1 * MS, device_s=0.005 * MS),
                         device="cuda"),                                                        # launch-bound
              comparison(row("b", 2 * MS), row("t", 2.2 * MS)),                                 # slower
              comparison(row("b", 2 * MS, iqr=0.5 * MS), row("t", 1.6 * MS, iqr=0.5 * MS))]     # runs overlap
    sweep = SweepResult("T000", "demo", "n", [1, 2, 3], points)
    assert sweep.headline() == ("t on dev, by n: launch-bound at 1, slower: 1.10x the time at 2, "
                                "no clear difference at 3.")  # "against b" would make it 21 words
    assert [r["verdict"].split(" (")[0] for r in sweep.table_rows()] == [
        "launch-bound", "slower: 1.10x the time", "no clear difference"]


def test_gpu_time_above_the_wall_time_is_explained_from_the_numbers():
    from utils.verdict import gpu_above_wall
    c = comparison(row("pageable", 8.29 * MS, device_s=10.1 * MS), row("pinned", 1.29 * MS, device_s=1.23 * MS),
                   device="cuda")
    note = gpu_above_wall(c)
    assert note.startswith("More GPU time than wall time (pageable: 10.1 ms of GPU work in 8.29 ms)")
    assert "pinned" not in note and "overlapped, each in full" in note and "separate calls" in note
    assert note in c.to_html(stored=True)
    merged = comparison(row("pageable", 8.29 * MS, device_s=10.1 * MS), row("pinned", MS, device_s=MS), device="cuda")
    merged.rows[0].device_merged = True   # measured as busy time: only a slower profiled call explains it
    assert "the profiled calls ran slower than the timed ones" in gpu_above_wall(merged)
    within_one_percent = comparison(row("a", 2 * MS, device_s=2.01 * MS), row("b", MS, device_s=MS), device="cuda")
    assert gpu_above_wall(within_one_percent) == ""


def test_a_sweep_explains_gpu_time_above_wall_time_once_for_every_point():
    from utils.present import SweepResult
    from utils.verdict import gpu_above_wall
    points = [comparison(row("odd", 7 * MS, device_s=10 * MS), row("even", 1.5 * MS, device_s=1.9 * MS), device="cuda"),
              comparison(row("odd", 2 * MS, device_s=2.9 * MS), row("even", 0.5 * MS, device_s=0.4 * MS), device="cuda")]
    sweep = SweepResult("T000", "demo", "n", [1024, 2048], points)
    html = sweep.to_html()
    assert html.count("More GPU time than wall time") == 1
    note = gpu_above_wall(*(("at n " + str(v), c) for v, c in zip(sweep.values, points)))
    assert "odd at n 1024" in note and "even at n 1024" in note and "odd at n 2048" in note and "even at n 2048" not in note


def test_gpu_busy_time_counts_overlapping_kernels_once():
    assert trace.busy_ns([(0, 10), (5, 12), (20, 25)]) == 17          # one stream, the next kernel early
    assert trace.busy_ns([(0, 10), (2, 4), (10, 11)]) == 11            # nested, then touching
    assert trace.busy_ns([]) == 0 and trace.busy_ns([(3, 3)]) == 0

