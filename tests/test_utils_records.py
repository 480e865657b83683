import pytest

from utils import records


def make(**kw):
    base = dict(comparison="c1", tip="T001", title="t", variant="v", role="baseline", device="cpu", device_name="CPU")
    base.update(kw)
    return records.Record(**base)


def test_append_and_load_round_trip(tmp_path):
    path = tmp_path / "sub" / "m.jsonl"
    records.append([make(), make(variant="w", role="variant", speedup=2.0)], path)
    records.append([make(comparison="c2")], path)
    loaded = records.load(path)
    assert [r.variant for r in loaded] == ["v", "w", "v"]
    assert loaded[1].speedup == 2.0 and loaded[2].comparison == "c2"


def test_default_path_and_switches(monkeypatch, tmp_path):
    monkeypatch.delenv("COURSE_RECORDS", raising=False)
    assert records.records_path() == records.DEFAULT_PATH
    monkeypatch.setenv("COURSE_RECORDS", str(tmp_path / "x.jsonl"))
    assert records.records_path() == tmp_path / "x.jsonl"
    monkeypatch.setenv("COURSE_RECORDS", " ")
    assert records.records_path() is None
    assert records.append([make()]) is None


def test_missing_file_loads_as_empty(tmp_path):
    assert records.load(tmp_path / "none.jsonl") == []


def test_corrupt_line_names_file_and_line(tmp_path):
    path = tmp_path / "m.jsonl"
    records.append([make()], path)
    with open(path, "a") as f:
        f.write("{not json\n")
    with pytest.raises(ValueError, match=r"m.jsonl:2"):
        records.load(path)


def test_unknown_fields_are_ignored_for_forward_compatibility(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text('{"comparison": "c", "tip": "T1", "title": "", "variant": "v", "role": "baseline", '
                    '"device": "cpu", "device_name": "CPU", "added_later": 1}\n')
    assert records.load(path)[0].tip == "T1"


def test_a_record_from_before_per_variant_devices_runs_on_its_comparisons_device(tmp_path):
    """Records written before ``variant_device`` existed (every reference run so far) still load,
    and each variant ran on the comparison's device."""
    path = tmp_path / "m.jsonl"
    path.write_text('{"comparison": "c", "tip": "T105", "title": "t", "variant": "GPU", "role": "variant", '
                    '"device": "cuda:0", "device_name": "NVIDIA H100 80GB HBM3", "median_s": 0.0015}\n')
    old = records.load(path)[0]
    assert (old.variant_device, old.variant_device_name, old.runs_on) == ("", "", "cuda:0")


def test_each_variant_keeps_its_own_device_through_a_file(tmp_path):
    path = tmp_path / "m.jsonl"
    records.append([make(device="cuda:0", device_name="GPU", variant_device="cpu", variant_device_name="CPU (x86_64)"),
                    make(device="cuda:0", device_name="GPU", variant="w", role="variant", variant_device="cuda:0",
                         variant_device_name="GPU")], path)
    cpu_row, gpu_row = records.load(path)
    assert (cpu_row.device, cpu_row.runs_on, cpu_row.variant_device_name) == ("cuda:0", "cpu", "CPU (x86_64)")
    assert gpu_row.runs_on == "cuda:0"


@pytest.mark.parametrize("line,reason", [
    ('{"comparison": 1, "tip": "T1", "title": "", "variant": "v", "role": "baseline", "device": "cpu", '
     '"device_name": "CPU"}',
     "wrong type"),
    ('{"comparison": "c", "tip": "T1", "title": "", "variant": "v", "role": "baseline", "device": "cpu"}',
     "missing field"),
    ('{"comparison": "c", "tip": "T1", "title": "", "variant": "v", "role": "baseline", "device": "cpu", '
     '"device_name": "CPU", "median_s": NaN}', "implausible value"),
    ('{"comparison": "c", "tip": "T1", "title": "", "variant": "v", "role": "baseline", "device": "cpu", '
     '"device_name": "CPU", "round_medians": [0.1, -0.1]}', "implausible value"),
    ('{"comparison": "c", "tip": "T1", "title": "", "variant": "v", "role": "baseline", "device": "cpu", '
     '"device_name": "CPU", "peak_bytes": false}', "wrong type"),
])
def test_a_record_of_the_wrong_shape_is_refused_with_its_place_and_reason(tmp_path, line, reason):
    path = tmp_path / "m.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(ValueError, match=rf"m.jsonl:1: .*{reason}") as raised:
        records.load(path)
    assert raised.value.__cause__.reason == reason
