"""Verdicts and claim verdicts on the course's H100 run (commit 52537eb): every GPU branch of
utils.verdict and utils.claims fed with real records, with the cases issue 19 names.

The full run is a shipped reference (references/h100-2026-11-25); the QUICK run lies beside the
repository (../shared/gpu-runs/h100-2026-11-25) where a checkout has it.
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
QUICK = REPO_ROOT.parent / "shared" / "gpu-runs" / "h100-2026-11-25" / "measurements-quick.jsonl"


def load(path):
    return [Result.from_records(group) for group in group_records(records.load(path))]


@pytest.fixture(scope="module")
def full():
    return load(FULL)


@pytest.fixture(scope="module")
def quick():
    if not QUICK.exists():
        pytest.skip(f"the H100 QUICK run is not beside this checkout ({QUICK})")
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


def test_t088_says_the_wall_clock_got_slower_and_the_gpu_work_fell(full):
    t088 = find(full, "T088")
    v = t088.verdict("autocast float16 + GradScaler")
    assert v.kind == "launch-bound"
    assert v.text == "host-bound: slower on the wall clock (1.25x the time); GPU work fell 4.36x (5.14 ms → 1.18 ms)"
    assert t088.headline() == ("autocast float16 + GradScaler on NVIDIA H100 80GB HBM3: host-bound; "
                               "GPU work fell 4.36x (5.14 ms → 1.18 ms).")   # the wall clock: in the table
    # each variant judged on its own share of busy GPU, not on the slowest variant's
    assert "busy for 15% of its 7.42 ms" in t088.verdict("autocast bfloat16").note
    assert "busy for 14% of its 6.19 ms" in t088.verdict("model.half(): everything float16").note


@pytest.mark.parametrize("run", ["full", "quick"])
def test_at_least_appears_only_where_the_gpu_time_ratio_supports_it(run, request):
    said = 0
    for c, row in gpu_rows(request.getfixturevalue(run)):
        if c.verdict(row).text.startswith("at least"):
            said += 1
            gpu_ratio = c.baseline.device_s / row.device_s if row.device_s else math.inf
            assert gpu_ratio > c.speedup(row), f"{c.tip} {row.label}: {c.verdict(row)}"
    assert said >= 3  # T028's expand and T030's identity and cdist still earn it


@pytest.mark.parametrize("tip,title,variant", [
    ("T069", "", "batch 1024"), ("T084", "", "batches of 16 images"), ("T090", "", "batch 128"),
    ("T094", "", "per-sample augmentation in DataLoader workers"),
])
def test_a_host_bound_baseline_earns_no_at_least_and_its_gpu_change_is_said(full, tip, title, variant):
    c = find(full, tip, title)
    v = c.verdict(variant)
    assert v.kind == "faster" and not v.text.startswith("at least"), v
    assert re.search(r"GPU work fell [\d.]+x \(.+ → .+\)", v.note), v


def test_the_exercise_3_solution_of_09_earns_no_at_least():
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
    assert v.text == "202x as fast" and "GPU work fell 95.5x" in v.note


@pytest.mark.parametrize("run", ["full", "quick"])
def test_under_one_percent_is_no_clear_difference_in_every_text(run, request):
    for c in request.getfixturevalue(run):
        text = every_text(c)
        assert not re.search(r"\b1\.00x (as fast|the time)", text), f"{c.tip} {c.title}: {text}"
        for row in c.rows[1:]:
            if abs(c.speedup(row) - 1) < SAME_TIME and c.verdict(row).kind != "launch-bound":
                assert c.verdict(row).text == "no clear difference", (c.tip, row.label)


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
    assert findings[0].why == "smaller than claimed: 396x against 512x"  # 77% of one per image
    findings, overall = judged("C075", full)
    assert overall == claims.NOT_REPRODUCED and findings[0].why == "smaller than claimed: 163x against 256x"


def test_quick_run_claims_c075_and_c076(quick):
    assert judged("C076", quick)[0][0].why == "smaller than claimed: 246x against 512x"  # 48% of the claim
    assert judged("C075", quick)[0][0].why == "smaller than claimed: 135x against 256x"  # 53%


def test_a_gain_above_no_grads_and_cudnn_benchmarks_is_larger_than_claimed(full):
    findings, overall = judged("C073", full)
    assert overall == claims.NOT_REPRODUCED
    assert findings[0].why == "larger than claimed: 1.04x against up to 1.00x"
    # One card alone cannot hold C073 against C023 and C072: it says so instead of "reproduced".
    lines = claim_lines(find(full, "T104"))
    assert any("1.04x, not measurable here (C023 and C072 not measured beside it)" in line for line in lines), lines


@pytest.mark.parametrize("claim_id", ["C029", "C030", "C033", "C034"])
def test_num_workers_claims_are_judged_on_the_best_setting_found(full, claim_id):
    findings, overall = judged(claim_id, full)
    t078 = find(full, "T078", "workers already running")
    assert findings[0].factor == pytest.approx(t078.speedup(t078.row("num_workers=4")))
    assert overall == claims.REPRODUCED


def test_quick_num_workers_claims_use_the_1_98x_of_four_workers(quick):
    findings, _ = judged("C029", quick)
    assert format(findings[0].factor, ".2f") == "1.98"


def test_mixed_precision_claims_say_why_they_are_not_measurable(full):
    findings, overall = judged("C056", full)
    assert overall == claims.NOT_MEASURABLE
    assert findings[0].why.startswith("host-bound: slower on the wall clock (1.25x the time); GPU work fell 4.36x")
