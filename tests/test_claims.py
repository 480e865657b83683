"""The claims ledger: valid data, every claim linked to a real demo, and honest verdicts."""
import dataclasses
import math
import re

import pytest

from grader import course
from utils import claims
from utils.comparison import Timing
from utils.present import Result
from utils.paths import REPO_ROOT

MS = 1e-3
CURRICULUM = REPO_ROOT.parent / "shared" / "CURRICULUM.md"


def test_the_shipped_ledger_is_valid_and_covers_the_curriculum_claims():
    ledger = claims.load()
    assert len(ledger) >= 40
    by_tip = {c.tip for c in ledger}
    # The claims CURRICULUM.md names explicitly: autotuner, channels_last, AMP, multiples of 8,
    # fused GELU, CPU serving.
    assert {"T086", "T087", "T088", "T089", "T092", "T105"} <= by_tip
    autotuner = [c for c in ledger if c.tip == "T086" and c.high == pytest.approx(1.7)]
    assert autotuner, "the cuDNN autotuner's 'up to 70%' claim"
    for c in ledger:
        assert re.fullmatch(r"C\d{3}", c.id) and re.fullmatch(r"T\d{3}", c.tip)
        assert re.fullmatch(r"00[0-4](#\d+)?", c.source), c
        assert c.claim and not re.search(r"[\u0400-\u04FF\u4e00-\u9fff]", c.claim + c.note), f"{c.id}: own words"


def test_a_claim_whose_condition_is_a_gpu_is_judged_on_gpus_only():
    # one rule for all: "saves GPU memory" judged "reproduced" from a CPU run, and the same
    # measurement "not measurable here" under a sibling claim, read as two verdicts on one fact
    # C031 (num_workers for GPU training) is about the DataLoader's workers: host processes, whatever trains
    host_side = {"C031"}
    gpu_conditioned = [c for c in claims.load() if "GPU" in c.condition.split(";")[0] and c.id not in host_side]
    assert len(gpu_conditioned) >= 20
    assert [c.id for c in gpu_conditioned if c.device != "gpu"] == []


@pytest.mark.skipif(not CURRICULUM.exists(), reason="the curriculum lives beside the repo (../shared)")
def test_every_claim_names_a_curriculum_tip():
    known = set(re.findall(r"^\| (T\d{3}) \|", CURRICULUM.read_text(), re.M))
    assert {c.tip for c in claims.load()} <= known


def test_every_measured_claim_points_at_a_demo_in_a_solution_notebook():
    sources = {a.id: (a.source_dir / a.notebook_name).read_text() for a in course.assignments()}
    assert sum(bool(c.measure) for c in claims.load()) >= 20
    for claim in claims.load():
        if not claim.measure:
            continue
        tip, title, variant = claim.measure["tip"], claim.measure["title"], claim.measure["variant"]
        holders = [name for name, text in sources.items() if f'"{tip}"' in text or f"\\\"{tip}\\\"" in text]
        assert holders, f"{claim.id}: no notebook measures {tip}"
        assert any(_literal(title) in sources[h] for h in holders), f"{claim.id}: title {title!r} not in {holders}"
        # A label built at run time (f"num_workers={nw}") is not in the source: then the claim must be
        # one a CPU run measures, and test_pipeline finds its row in the QUICK run's records.
        for label in claims.variants(claim):
            assert claim.device != "gpu" or any(_literal(label) in sources[h] for h in holders), \
                f"{claim.id}: variant {label!r} not found in {holders}"


def _literal(text: str) -> str:
    """How a string literal appears inside the notebook's JSON source."""
    import json
    return json.dumps(text)[1:-1]


def comparison(factor, *, device="cpu", peak=(100, 100), rounds_agree=True, device_s=None):
    base_rounds = [2 * MS] * 3
    tip_rounds = [2 * MS / factor] * 3 if rounds_agree else [1 * MS, 3 * MS, 1 * MS]
    rows = [Timing("base", 2 * MS, 0.01 * MS, 30, peak[0], "m", {}, base_rounds, device_s),
            Timing("tip", 2 * MS / factor, 0.01 * MS, 30, peak[1], "m", {}, tip_rounds, device_s)]
    return Result("T086", "demo", device, f"{device} box", {}, rows)


def claim(low=1.0, high=math.inf, metric="time", device="any"):
    return claims.Claim("C999", "T086", "000#2", "a claim", metric, low, high, device=device,
                        measure={"tip": "T086", "title": "demo", "variant": "tip"})


@pytest.mark.parametrize("the_claim,factor,expected", [
    (claim(), 1.5, claims.REPRODUCED),
    (claim(1.27, 1.7), 1.5, claims.REPRODUCED),
    (claim(1.27, 1.7), 1.1, claims.NOT_REPRODUCED),      # faster, but less than claimed
    (claim(1.27, 1.7), 3.0, claims.NOT_REPRODUCED),      # outside the range: larger than claimed
    (claim(), 0.5, claims.NOT_REPRODUCED),               # slower
    (claim(1e-9, 1.0), 0.5, claims.REPRODUCED),          # a cost claim ("checkpointing is slower")
    (claim(1.0, 1.0), 1.0, claims.REPRODUCED),           # "no gain, no harm"
])
def test_time_claims(the_claim, factor, expected):
    findings, overall = claims.evaluate(the_claim, [("this run", [comparison(factor)])])
    assert findings[0].verdict == expected and overall == expected


def test_memory_claims_use_peak_memory():
    c = claim(metric="memory")
    assert claims.evaluate(c, [("r", [comparison(1.0, peak=(100, 40))])])[1] == claims.REPRODUCED
    assert claims.evaluate(c, [("r", [comparison(1.0, peak=(100, 100))])])[1] == claims.NOT_REPRODUCED


def test_launch_bound_gpu_claims_and_missing_measurements_are_not_measurable():
    launch_bound = comparison(1.5, device="cuda:0", device_s=10e-6)
    assert claims.evaluate(claim(), [("r", [launch_bound])])[1] == claims.NOT_MEASURABLE
    assert claims.evaluate(claim(device="gpu"), [("r", [comparison(1.5)])])[1] == claims.NOT_MEASURABLE
    assert claims.evaluate(claim(), [("r", [])]) == ([], claims.NOT_MEASURABLE)


def test_devices_that_disagree_make_a_claim_device_dependent():
    runs = [("laptop", [comparison(2.0)]), ("h100", [comparison(1.0, device="cuda:0", device_s=2 * MS)])]
    findings, overall = claims.evaluate(claim(), runs)
    assert [f.verdict for f in findings] == [claims.REPRODUCED, claims.NOT_REPRODUCED]
    assert overall == claims.DEVICE_DEPENDENT


@pytest.mark.parametrize("entry,message", [
    ('id = "C1"\ntip = "T1"\nsource = "000"\nclaim = "x"\nmetric = "time"\nlow = 2.0\nhigh = 1.0', "low <= high"),
    ('id = "C1"\ntip = "T1"\nsource = "000"\nclaim = "x"\nmetric = "speed"\nlow = 1.0\nhigh = 2.0', "metric"),
    ('id = "C1"\ntip = "T1"\nsource = "000"\nclaim = "x"\nmetric = "time"\nlow = 1.0\nhigh = 2.0\nbogus = 1',
     "unknown fields"),
    ('id = "C1"\ntip = "T1"\nsource = "000"\nmetric = "time"\nlow = 1.0\nhigh = 2.0', "claim"),
])
def test_malformed_entries_are_refused_with_their_id(tmp_path, entry, message):
    path = tmp_path / "claims.toml"
    path.write_text("[[claim]]\n" + entry + "\n")
    with pytest.raises(ValueError, match=message):
        claims.load(path)


def test_duplicate_ids_are_refused(tmp_path):
    one = '[[claim]]\nid = "C1"\ntip = "T1"\nsource = "000"\nclaim = "x"\nmetric = "time"\nlow = 1.0\nhigh = 2.0\n'
    path = tmp_path / "claims.toml"
    path.write_text(one + one)
    with pytest.raises(ValueError, match="duplicate"):
        claims.load(path)


def test_a_comparison_shows_the_claims_about_it_beside_its_result(monkeypatch, tmp_path):
    ledger = tmp_path / "claims.toml"
    ledger.write_text('[[claim]]\nid = "C900"\ntip = "T086"\nsource = "000#2"\nclaim = "The autotuner helps."\n'
                      'metric = "time"\nlow = 1.27\nhigh = 1.7\n'
                      'measure = { tip = "T086", title = "demo", variant = "tip" }\n')
    monkeypatch.setattr(claims, "LEDGER", ledger)
    page = comparison(1.5)._repr_html_()
    assert "Source write-up 000 (item 2) reports 1.27-1.7x speed; here: 1.50x, reproduced." in page
    assert page.index("Source write-up 000") > page.index("<details>")  # folded: opened on demand
    smaller = "here: 1.10x, not reproduced (smaller than claimed: 1.10x against 1.27-1.70x)."
    assert smaller in comparison(1.1)._repr_html_()


# ---------------------------------------------------------------- one rule: the range, the matching row

def test_outside_the_range_says_smaller_or_larger_than_claimed_with_both_numbers():
    assert claims.judge(claim(1.27, 1.7), *comparison(1.1).pair("tip")) == (
        pytest.approx(1.1), claims.NOT_REPRODUCED, "smaller than claimed: 1.10x against 1.27-1.70x")
    assert claims.judge(claim(3.0, 5.0), *comparison(6.0).pair("tip"))[1:] == (
        claims.NOT_REPRODUCED, "larger than claimed: 6.00x against 3.00-5.00x")
    assert claims.judge(claim(1.0, math.inf), *comparison(1.03).pair("tip"))[1] == claims.REPRODUCED  # no range


def test_a_range_per_unit_of_a_size_scales_with_that_size():
    per_image = claims.Claim("C998", "T086", "003#5", "gain = batch", "time", 1.0, 1.0, scale="n",
                             measure={"tip": "T086", "title": "demo", "variant": "tip"})
    batched = comparison(246.0)
    batched.sizes = {"n": 512}
    assert per_image.direction == "gain" and per_image.claimed() == "a speed-up of the number of n"
    assert claims.judge(per_image, *batched.pair("tip"))[1:] == (
        claims.NOT_REPRODUCED, "smaller than claimed: 246x against 512x")
    half_to_all = dataclasses.replace(per_image, low=0.5)
    assert half_to_all.claimed() == "a speed-up of 0.5-1 x the number of n"
    assert claims.judge(half_to_all, *batched.pair("tip"))[1:] == (
        claims.NOT_REPRODUCED, "smaller than claimed: 246x against 256-512x")
    batched.sizes = {"n": 400}
    assert claims.judge(half_to_all, *batched.pair("tip"))[1] == claims.REPRODUCED
    batched.sizes = {}
    assert claims.judge(half_to_all, *batched.pair("tip"))[1:] == (claims.NOT_MEASURABLE, "the comparison records no n")


def test_a_claim_below_others_is_capped_by_their_gains_in_the_same_run():
    capped = claims.Claim("C997", "T086", "003#3", "smaller gain", "time", 1.0, math.inf, below=("C996",),
                          measure={"tip": "T086", "title": "demo", "variant": "tip"})
    other = claims.Claim("C996", "T999", "003#1", "bigger gain", "time", 1.0, math.inf,
                         measure={"tip": "T999", "title": "demo", "variant": "tip"})
    mine, theirs = comparison(1.5), comparison(2.0)
    theirs.tip = "T999"
    assert claims.evaluate(capped, [("r", [mine, theirs])], [capped, other])[1] == claims.REPRODUCED
    theirs.rows[1].median = theirs.rows[1].round_medians[0] = 2 * MS / 1.2
    findings, overall = claims.evaluate(capped, [("r", [mine, theirs])], [capped, other])
    assert overall == claims.NOT_REPRODUCED and findings[0].reason == "larger than claimed: 1.50x against up to 1.20x"
    findings, overall = claims.evaluate(capped, [("r", [mine])], [capped, other])
    assert overall == claims.NOT_MEASURABLE and findings[0].reason == "C996 not measured beside it"


def test_a_list_of_variants_is_judged_on_the_fastest_one_present():
    rows = [Timing(label, median * MS, 0.01 * MS, 30, None, None, {}, [median * MS] * 3)
            for label, median in (("workers=0", 2.0), ("workers=1", 2.4), ("workers=2", 1.5), ("workers=4", 1.0))]
    sweep = Result("T078", "demo", "cpu", "cpu box", {}, rows)
    tried = ["workers=1", "workers=2", "workers=4", "workers=8"]  # workers=8 was not measured here
    best = claims.Claim("C995", "T078", "002", "tune it", "time", 1.0, math.inf,
                        measure={"tip": "T078", "title": "demo", "variant": tried})
    comparison_, row = claims.find_row(best, [sweep])
    assert row.label == "workers=4" and claims.judge(best, comparison_, row)[:2] == (2.0, claims.REPRODUCED)


def test_the_ledger_reads_variant_lists_scale_and_below(tmp_path):
    path = tmp_path / "claims.toml"
    path.write_text('[[claim]]\nid = "C1"\ntip = "T1"\nsource = "000"\nclaim = "x"\nmetric = "time"\nlow = 1.0\n'
                    'high = 1.0\nscale = "images"\nbelow = ["C2"]\n'
                    'measure = { tip = "T1", title = "t", variant = ["a", "b"] }\n')
    (loaded,) = claims.load(path)
    assert loaded.scale == "images" and loaded.below == ("C2",) and claims.variants(loaded) == ["a", "b"]
