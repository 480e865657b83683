"""benchmarks/class_scale.py's arithmetic: the per-submission cost is the slope between two class
sizes, and the estimate for a class multiplies only that slope."""
import importlib.util
import sys

import pytest

from utils.paths import REPO_ROOT

spec = importlib.util.spec_from_file_location("class_scale", REPO_ROOT / "benchmarks" / "class_scale.py")
class_scale = sys.modules["class_scale"] = importlib.util.module_from_spec(spec)  # dataclasses look it up
spec.loader.exec_module(class_scale)


def test_measure_takes_the_slope_between_the_two_classes(monkeypatch, tmp_path):
    core_s = {"class": 10 + 17 * 2.5, "small": 10 + 3 * 2.5}   # 10 core-s fixed, 2.5 per submission
    monkeypatch.setattr(class_scale, "grade", lambda root, a, n, shards, url, cold: (core_s[root.name], 1.0))
    row = class_scale.measure(tmp_path, type("A", (), {"id": "03_building_models"}), 17, 3, 2,
                              {"warm-class": "c", "warm-small": "s"})
    assert row["core-s per submission"] == pytest.approx(2.5)
    assert row["fixed core-s"] == pytest.approx(10)
    assert row["submissions per core-s"] == pytest.approx(17 / 52.5)


def test_the_estimate_multiplies_the_per_submission_cost_only():
    rows = [{"assignment": "a", "core-s per submission": 2.0, "fixed core-s": 10.0},
            {"assignment": "b", "core-s per submission": 4.0, "fixed core-s": 20.0}]
    text = class_scale.estimate(rows, 1000, 2)
    assert "1000 x 6.0 core-s + 30 core-s fixed = 6,030 core-seconds" in text
    assert "Costliest per submission: b (4.00 core-s)" in text


def test_a_recorded_run_replaces_only_its_own_section_of_the_measurements_page(tmp_path):
    from benchmarks import record

    page = tmp_path / "measurements.md"
    record.write_section("class_scale", "python benchmarks/class_scale.py", "first figures", 1.0, page)
    record.write_section("grading_throughput", "python benchmarks/grading_throughput.py", "ratio 20x", 1.5, page)
    record.write_section("class_scale", "python benchmarks/class_scale.py", "second figures", 0.5, page)
    text = page.read_text()
    assert text.startswith("# Measurements") and "first figures" not in text
    assert text.count("## class_scale") == 1 and "second figures" in text and "ratio 20x" in text
    assert "load average 0.5 before" in text and "cores" in text
