"""Verdicts and claim verdicts on the course's H100 run (commit 52537eb): every GPU branch of
utils.verdict and utils.claims fed with real records, with the cases seen on the H100.

The full run is a shipped reference (references/h100-2026-11-25); the QUICK run is test data
(tests/data/h100-2026-11-25), copied from the run's folder so that every checkout tests it.
"""
import html
import math
import re

import pytest

from utils import claims, records
from utils.comparison import group_records
from utils.paths import REPO_ROOT
from utils.present import Result, claim_lines, table_rows
from utils.verdict import SAME_TIME, gpu_above_wall

FULL = REPO_ROOT / "references" / "h100-2026-11-25" / "measurements.jsonl"
QUICK = REPO_ROOT / "tests" / "data" / "h100-2026-11-25" / "measurements-quick.jsonl"


def load(path):
    return [Result.from_records(group) for group in group_records(records.load(path))]


@pytest.fixture(scope="module")
def full():
    return load(FULL)


@pytest.fixture(scope="module")
def quick():
    return load(QUICK)


def find(comparisons, tip, title=""):
    found = [c for c in comparisons if c.tip == tip and title in c.title]
    assert len(found) == 1, f"{tip} {title!r}: {[c.title for c in found]}"
    return found[0]


def gpu_rows(comparisons):
    return [(c, row) for c in comparisons for row in c.rows[1:]
            if c.device.startswith("cuda") and row.device_s is not None and c.baseline.device_s is not None]


def every_text(c):
    """Every sentence a card of this comparison generates from its numbers alone."""
    return "\n".join([c.headline(), c.summary(), *claim_lines(c), *(str(cells) for compact in (True, False)
                                                                   for cells in table_rows(c, compact))])


def test_t088_host_bound_is_judged_on_gpu_time_and_says_the_wall_clock_got_slower(full):
    t088 = find(full, "T088")
    v = t088.verdict("autocast float16 + GradScaler")
    assert (v.kind, v.clock, v.text) == ("faster", "GPU", "host-bound: 4.36x as fast in GPU time")
    assert "the wall clock says slower (1.25x the time)" in v.note
    assert t088.headline().startswith("autocast float16 + GradScaler: 4.36x as fast in GPU time")
    # each variant judged on its own share of busy GPU, not on the slowest variant's
    assert "busy for 15% of its 7.42 ms" in t088.verdict("autocast bfloat16").note
    assert "busy for 14% of its 6.19 ms" in t088.verdict("model.half(): everything float16").note


@pytest.mark.parametrize("run", ["full", "quick"])
def test_every_gpu_row_follows_the_one_rule(run, request):
    """utils.verdict's rule on every profiled row of a real run: which clock decides, and the label."""
    from utils.verdict import host_bound_reason, wall_verdict
    judged_on_gpu = 0
    for c, row in gpu_rows(request.getfixturevalue(run)):
        v = c.verdict(row)
        if v.kind == "launch-bound":
            assert max(c.baseline.device_s, row.device_s) < 1e-4
            continue
        hosts = [r for r in (c.baseline, row) if host_bound_reason(c, r)]
        assert v.text.startswith("host-bound: ") == bool(hosts), (c.tip, row.label, v)
        wall = wall_verdict(c.baseline, row)
        if c.about_overhead:
            assert v.clock == "wall" and v.kind == wall.kind, (c.tip, row.label, v)
        elif hosts or v.clock == "GPU":
            judged_on_gpu += 1
            assert v.clock == "GPU" and v.ratio == pytest.approx(c.baseline.device_s / row.device_s if row.device_s
                                                                 else math.inf), (c.tip, row.label, v)
        else:
            assert v.clock == "wall" and v.kind == wall.kind
        assert "at least" not in v.text
    assert judged_on_gpu >= 5


@pytest.mark.parametrize("tip,title,variant", [
    ("T069", "", "batch 1024"), ("T084", "", "batches of 16 images"), ("T090", "", "batch 128"),
    ("T094", "", "per-sample augmentation in DataLoader workers"),
])
def test_a_host_bound_baseline_earns_no_at_least_and_its_gpu_change_is_said(full, tip, title, variant):
    c = find(full, tip, title)
    v = c.verdict(variant)
    assert v.kind == "faster" and not v.text.startswith("at least"), v
    assert re.search(r"GPU work fell [\d.]+x \(.+ → .+\)", v.note), v


def test_the_exercise_3_solution_of_09_is_labelled_host_bound():
    # Not recorded (record=False): its printed numbers, about_overhead as the notebook passes it.
    from utils.comparison import Timing
    MS = 1e-3
    base = Timing("as written: one norm per row", 37.4 * MS, 14.1 * MS, 22, None, None, {},
                  [37 * MS, 38 * MS, 37.4 * MS], 4.03 * MS, 32 * MS, 46 * MS)
    fixed = Timing("row norms in one call", 0.185 * MS, 0.044 * MS, 57, None, None, {},
                   [0.18 * MS, 0.19 * MS, 0.185 * MS], 0.0422 * MS, 0.16 * MS, 0.2 * MS)
    c = Result("T094", "mystery_step before and after the fix", "cuda:0", "NVIDIA H100 80GB HBM3", {}, [base, fixed],
               about_overhead=True)
    v = c.verdict("row norms in one call")
    assert v.text == "host-bound: 202x as fast" and "GPU work fell 95.5x" in v.note   # labelled, on the wall clock


@pytest.mark.parametrize("run", ["full", "quick"])
def test_under_one_percent_is_no_clear_difference_in_every_text(run, request):
    for c in request.getfixturevalue(run):
        text = every_text(c)
        assert not re.search(r"\b1\.00x (as fast|the time)", text), f"{c.tip} {c.title}: {text}"
        for row in c.rows[1:]:
            v = c.verdict(row)
            if abs(c.speedup(row) - 1) < SAME_TIME and v.clock == "wall" and v.kind != "launch-bound":
                assert v.phrase == "no clear difference", (c.tip, row.label)


def test_t075_at_a_0_4_percent_gap_is_no_clear_difference(full):
    c = find(full, "T075", "MLP training step")
    assert str(c.verdict("nn.ReLU(inplace=True)")) == "no clear difference (under 1% apart)"
    assert "no clear difference from nn.ReLU()" in c.headline()


@pytest.mark.parametrize("tip,title,label", [
    ("T017", "", "pageable host memory -> GPU"),
    ("T016", "", "pinned non_blocking copy on a side stream, overlapping the matmul"),
    ("T055", "", "zero_grad(set_to_none=False)"),
    ("T089", "", "n = 2^k - 1 (odd)"),
    ("T091", "matrix product with TF32", "float32, TF32 off (fp32_precision = 'ieee')"),
    ("T094", "", "batched augmentation on the training device"),
])
def test_gpu_time_above_the_wall_clock_is_explained(full, tip, title, label):
    c = find(full, tip, title)
    row = c.row(label)
    assert row.device_s > row.median
    note = gpu_above_wall(c)
    assert f"{label}: " in note and "More GPU time than wall time" in note
    assert html.escape(note) in c.to_html(stored=True)


def test_every_row_with_more_gpu_time_than_wall_time_is_named_and_no_other(full):
    for c in full:
        note = gpu_above_wall(c)
        for row in c.rows:
            over = row.device_s is not None and row.device_s > (1 + SAME_TIME) * row.median
            assert (f"{row.label}: " in note) == over, (c.tip, row.label, note)


# ---------------------------------------------------------------- claims

def judged(claim_id, *runs):
    claim = next(c for c in claims.load() if c.id == claim_id)
    return claims.evaluate(claim, [(f"run {i}", run) for i, run in enumerate(runs)])


def test_a_gain_below_the_claimed_range_is_smaller_than_claimed_with_both_numbers(full):
    findings, overall = judged("C076", full)
    assert overall == claims.NOT_REPRODUCED
    assert findings[0].reason == "smaller than claimed: 396x against 512x"  # 77% of one per image
    findings, overall = judged("C075", full)
    assert overall == claims.NOT_REPRODUCED and findings[0].reason == "smaller than claimed: 163x against 256x"


def test_quick_run_claims_c075_and_c076(quick):
    assert judged("C076", quick)[0][0].reason == "smaller than claimed: 246x against 512x"  # 48% of the claim
    assert judged("C075", quick)[0][0].reason == "smaller than claimed: 135x against 256x"  # 53%


def test_compiling_is_judged_on_gpu_time_beside_no_grad_and_cudnn_benchmark(full):
    findings, overall = judged("C073", full)
    assert overall == claims.NOT_REPRODUCED
    assert findings[0].reason == "no clear effect"   # judged on GPU time (2.24 → 2.15 ms, within 5%), as its card is
    # One card alone cannot hold C073 against C023 and C072: it says so instead of "reproduced".
    lines = claim_lines(find(full, "T104"))
    assert any("1.04x in GPU time, not measurable here (C023 and C072 not measured beside it)" in line for line in lines), lines
    # In a notebook, the comparisons measured before it count: 11 measures C072 (T103), not C023 (05's T073).
    from utils import present
    present._MEASURED[:] = [c for c in full if c.tip in ("T103", "T104")]
    try:
        lines = claim_lines(find(full, "T104"))
    finally:
        present._MEASURED.clear()
    assert any("not measurable here (C023 not measured beside it)" in line for line in lines), lines


@pytest.mark.parametrize("claim_id", ["C029", "C030", "C033", "C034"])
def test_num_workers_claims_are_judged_on_the_best_setting_found(full, claim_id):
    findings, overall = judged(claim_id, full)
    t078 = find(full, "T078", "workers already running")
    assert findings[0].factor == pytest.approx(t078.speedup(t078.row("num_workers=4")))
    assert overall == claims.REPRODUCED


def test_quick_num_workers_claims_use_the_1_98x_of_four_workers(quick):
    findings, _ = judged("C029", quick)
    assert format(findings[0].factor, ".2f") == "1.98"


def test_a_host_bound_mixed_precision_claim_is_judged_on_gpu_time(full):
    findings, overall = judged("C056", full)   # judged on GPU time, as its verdict is: 4.36x against 2.75x
    assert overall == claims.NOT_REPRODUCED and findings[0].reason == "larger than claimed: 4.36x against 2.75x"


# ---------------------------------------------------------------- the H100 runs of 2026-11-28
# tests/data/h100-2026-11-28: QUICK (all twelve) and full (01, 07, 09, 11) at 5d53ca8, as the runner wrote them.
RUN_1128 = REPO_ROOT / "tests" / "data" / "h100-2026-11-28"


@pytest.fixture(scope="module")
def quick_1128():
    return load(RUN_1128 / "measurements-quick.jsonl")


@pytest.fixture(scope="module")
def full_1128():
    return load(RUN_1128 / "measurements-full.jsonl")


def keyed(comparisons):
    """Each CUDA comparison by tip, title, labels and its place among equals (a sweep's points)."""
    out, seen = {}, {}
    for c in comparisons:
        if c.device.startswith("cuda"):
            key = (c.tip, c.title, tuple(r.label for r in c.rows))
            seen[key] = seen.get(key, 0) + 1
            out[key + (seen[key],)] = c
    return out


def test_quick_and_full_give_the_same_verdict_on_every_row_they_share(quick_1128, full_1128):
    quick, full = keyed(quick_1128), keyed(full_1128)
    shared = [key for key in quick if key in full]
    assert {key[0] for key in shared} >= {"T013", "T016", "T017", "T086", "T088", "T089", "T091", "T094", "T104"}
    differ = [(key[0], key[1], key[3], row.label, quick[key].verdict(row.label).text, full[key].verdict(row.label).text)
              for key in shared for row in quick[key].rows[1:]
              if quick[key].verdict(row.label).kind != full[key].verdict(row.label).kind]
    assert differ == []


def test_quick_and_full_give_the_same_claim_verdicts(quick_1128, full_1128):
    ledger = claims.load()
    compared = 0
    for claim in ledger:
        found = [claims.evaluate(claim, [(name, run)], ledger) for name, run in (("quick", quick_1128), ("full", full_1128))]
        beside = all(findings and not findings[0].reason.endswith("not measured beside it") for findings, _ in found)
        if beside:   # (full mode ran four notebooks: a claim bounded by one of the other eight is not judged there)
            compared += 1
            assert found[0][0][0].verdict == found[1][0][0].verdict, (claim.id, found)
    assert compared >= 25


def test_c062_gets_one_verdict_in_both_modes_from_gpu_time(quick_1128, full_1128):
    # C062 at 5d53ca8's labels: QUICK said 1.12x reproduced, full 1.04x not, on GPU ratios of 1.04 and 1.03
    import dataclasses
    claim = next(c for c in claims.load() if c.id == "C062")
    claim = dataclasses.replace(claim, measure={**claim.measure, "variant": "n = 2^k (a multiple of 8 and of 256)",
                                                "against": "n = 2^k + 8 (a multiple of 8, not of 64)"})
    verdicts = {name: claims.evaluate(claim, [(name, run)], []) for name, run in (("quick", quick_1128), ("full", full_1128))}
    assert all(findings for findings, _ in verdicts.values()), verdicts
    assert {overall for _, overall in verdicts.values()} == {claims.NOT_REPRODUCED}
    assert all(findings[0].reason == "no clear effect" for findings, _ in verdicts.values())


@pytest.mark.parametrize("run", ["quick_1128", "full_1128"])
def test_t091_float32_is_judged_on_its_falling_gpu_time(run, request):
    c = find(request.getfixturevalue(run), "T091", "MLP forward + backward")
    v = c.verdict("float32")   # full: the wall clock said "slower: 1.19x" while GPU time fell 1.35 → 1.19 ms
    assert (v.kind, v.clock) == ("faster", "GPU") and v.text in ("1.13x as fast in GPU time", "1.14x as fast in GPU time")


@pytest.mark.parametrize("run", ["quick_1128", "full_1128"])
def test_t104_compiling_and_exporting_show_no_clear_difference_in_either_mode(run, request):
    c = find(request.getfixturevalue(run), "T104")
    for label in ("torch.compile, after its first call", "torch.export program loaded from .pt2"):
        assert c.verdict(label).kind == "no clear difference", (label, c.verdict(label))
    assert "slower" not in c.verdict("torch.export program loaded from .pt2").text   # full said "slower: 1.01x"


@pytest.mark.parametrize("tip,title,points", [
    ("T090", "samples per second by batch size", [0, 1, 2]),    # batch 16, 64, 256: 15-27% busy
    ("T069", "", [1]),                                          # at 2048
    ("T106", "requests per second", [1, 2]),                    # at 4 and 16
    ("T081", "", [0]),                                          # nvJPEG: 8% busy
    ("T030", "by dimension", [2]),                              # d=256, beside an 83 µs variant
])
def test_every_host_bound_row_the_issue_named_is_labelled(quick_1128, tip, title, points):
    found = [c for c in quick_1128 if c.tip == tip and title in c.title and c.device.startswith("cuda")]
    for i in points:
        c = found[i]
        rows = c.rows[1:] if tip != "T081" else [c.row("torchvision decode_jpeg on the GPU (nvJPEG)")]
        for row in rows:
            assert c.verdict(row).text.startswith("host-bound: "), (tip, i, row.label, c.verdict(row))


def test_c005_is_judged_on_the_better_of_the_one_stream_and_side_stream_rows(quick_1128, full_1128):
    # 01 [30] judged it on the one-stream row ("not reproduced") while the side stream ran 1.47x as fast
    for run in (quick_1128, full_1128):
        findings, overall = judged("C005", run)
        c = find(run, "T016")
        side = c.pair("pinned non_blocking copy on a side stream, overlapping the matmul", "pinned blocking copy, then matmul")
        assert overall == claims.REPRODUCED and findings[0].factor == pytest.approx(side[0].speedup(side[1]))
