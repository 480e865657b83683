"""Reference runs: stored GPU records shown beside a learner's measurements, only at matching sizes."""
import json

import pytest

from utils import bench, present, records, references
from utils.comparison import Timing
from utils.present import Result
from utils.report import build_report

MS = 1e-3


def demo(device="cpu", n=4, labels=("float64", "float32"), quick=False, spec=None, tip="T918", title="matmul"):
    rows = [Timing(labels[0], 2 * MS, 0.01 * MS, 30, None, None, {}, [2 * MS] * 3, 1.9 * MS if device != "cpu" else None),
            Timing(labels[1], 1 * MS, 0.01 * MS, 30, None, None, {}, [1 * MS] * 3, 1.0 * MS if device != "cpu" else None)]
    name = "NVIDIA Test GPU" if device != "cpu" else "CPU (test)"
    return Result(tip, title, device, name, {"n": n}, rows, sizes_spec=spec, quick=quick, notebook="01_x")


SPEC = {"cpu": {"n": 4}, "cpu-quick": {"n": 2}, "gpu": {"n": 64}}


@pytest.fixture
def refs(tmp_path, monkeypatch):
    root = tmp_path / "references"
    monkeypatch.setattr(references, "REFERENCES", root)
    references._load_runs.cache_clear()
    yield root
    references._load_runs.cache_clear()


def store(tmp_path, comparisons, name="gpu-1", commit="abc123", manifest=True, device_name=None):
    run_dir = tmp_path / f"run-{name}"
    run_dir.mkdir()
    for c in comparisons:
        records.append(c.to_records(), run_dir / "measurements.jsonl")
    if manifest:
        extra = {"device_name": device_name} if device_name else {}
        (run_dir / "run.json").write_text(json.dumps({"commit": commit, "mode": "full", **extra}))
    return references.add(run_dir, name)


def test_a_reference_at_the_sizes_the_notebook_picks_for_its_device_is_shown(tmp_path, refs):
    store(tmp_path, [demo("cuda:0", n=64, spec=SPEC)])
    mine = demo("cpu", n=4, spec=SPEC)
    [(run, ref)] = references.matching(mine.demo)
    assert run.name == "gpu-1" and ref.device_name == "NVIDIA Test GPU"
    assert references.matching(mine.demo) and "reference run gpu-1" not in repr(mine)  # it agrees: folded
    assert present.reference_lines(mine.demo, "float32") == ["On NVIDIA Test GPU (reference run gpu-1): 2.00x as fast."]
    page = mine._repr_html_().replace("<br>", " ")  # wrapped table cells
    assert "this run beside the reference runs" in page and "NVIDIA Test GPU, torch" in page and "commit abc123" in page


def test_a_reference_measured_on_its_hosts_cpu_is_labelled_as_that_machines_cpu(tmp_path, refs):
    # a host-side comparison (Pillow, DDP on CPU) in a GPU machine's run: its CPU, not this one's, not its GPU
    store(tmp_path, [demo("cpu", n=4, spec=SPEC)], device_name="NVIDIA Test GPU")
    mine = demo("cpu", n=4, spec=SPEC)
    assert present.reference_lines(mine.demo, "float32") == ["On reference run gpu-1's host, CPU (test): 2.00x as fast."]
    page = mine._repr_html_().replace("<br>", " ")  # wrapped table cells
    assert "CPU (test), torch" in page and "NVIDIA Test GPU" not in page


@pytest.mark.parametrize("change", ["resized", "relabelled", "retitled"])
def test_a_stale_reference_is_not_shown(tmp_path, refs, change):
    store(tmp_path, [demo("cuda:0", n=64, spec=SPEC)])
    mine = {"resized": demo(spec={**SPEC, "gpu": {"n": 128}}),
            "relabelled": demo(spec=SPEC, labels=("float64", "bfloat16")),
            "retitled": demo(spec=SPEC, title="another")}[change]
    assert references.matching(mine.demo) == []
    assert "reference run" not in repr(mine) and "beside the reference runs" not in mine._repr_html_()


def test_plain_dict_sizes_must_be_equal(tmp_path, refs):
    store(tmp_path, [demo("cuda:0", n=4)])
    assert len(references.matching(demo(n=4).demo)) == 1
    assert references.matching(demo(n=8).demo) == []


def test_add_refuses_bad_input(tmp_path, refs):
    with pytest.raises(ValueError, match="reference name"):
        references.add(tmp_path, "Bad Name")
    with pytest.raises(FileNotFoundError, match="no measurement records"):
        references.add(tmp_path, "x")
    with pytest.raises(ValueError, match="--commit"):
        store(tmp_path, [demo("cuda:0")], name="nocommit", manifest=False)
    store(tmp_path, [demo("cuda:0")], name="twice")
    with pytest.raises(FileExistsError, match="--force"):
        references.add(tmp_path / "run-twice", "twice")
    with pytest.raises(ValueError, match="QUICK and full"):
        store(tmp_path, [demo("cuda:0"), demo("cuda:0", quick=True)], name="mixed")
    with pytest.raises(ValueError, match="mixes devices"):
        store(tmp_path, [demo("cuda:0"), demo("mps")], name="two-gpus")


def test_manifest_comes_from_the_records_and_host_comparisons_are_allowed(tmp_path, refs):
    host = demo("cpu", tip="T070", title="png")
    folder = store(tmp_path, [demo("cuda:0"), host], name="h1")
    manifest = json.loads((folder / "run.json").read_text())
    assert manifest["device"] == "cuda" and manifest["device_name"] == "NVIDIA Test GPU"
    assert manifest["commit"] == "abc123" and manifest["quick"] is False and "mode" not in manifest
    assert manifest["records"] == 4


def test_cli_reports_errors_with_exit_code_2(tmp_path, refs, capsys):
    assert references.main(["add", str(tmp_path / "nothing"), "--name", "x"]) == 2
    assert "no measurement records" in capsys.readouterr().err
    store(tmp_path, [demo("cuda:0")], name="listed")
    assert references.main(["list"]) == 0
    assert "listed" in capsys.readouterr().out


def test_report_puts_devices_side_by_side_and_lists_reference_only_demos(tmp_path, refs, monkeypatch):
    gpu_only = demo("cuda:0", tip="T917", title="pinned copy", labels=("pageable", "pinned"))
    store(tmp_path, [demo("cuda:0", n=64, spec=SPEC), gpu_only])
    mine = tmp_path / "mine.jsonl"
    records.append(demo("cpu", n=4, spec=SPEC).to_records(), mine)
    page = build_report(mine, tmp_path / "report.html").read_text()
    assert "this run beside the reference runs" in page
    assert "Reference only" in page and "pinned copy" in page
    assert "Claims ledger" in page and "Reference runs shipped with the course" in page


def test_the_shipped_references_load_and_name_their_run():
    for run in references.load_runs():
        assert run.manifest.get("commit") and run.manifest.get("device_name"), run.name
        assert run.comparisons, run.name


def test_sizes_spec_travels_through_records(tmp_path):
    bench.configure(True)
    try:
        spec = bench.sizes("cpu", cpu=dict(n=8), quick=dict(n=2), gpu=dict(n=64))
    finally:
        bench.configure(False)
    c = demo(n=spec["n"], spec=spec.spec)
    path = tmp_path / "m.jsonl"
    records.append(c.to_records(), path)
    back = Result.from_records(records.load(path))
    assert back.sizes_spec == spec.spec and back.baseline.round_medians == c.baseline.round_medians


def test_claims_hold_only_comparable_references_against_a_run(tmp_path, refs):
    from utils.report import _comparable

    gpu_only = demo("cuda:0", tip="T917", title="pinned copy", labels=("pageable", "pinned"))
    store(tmp_path, [demo("cuda:0", n=64, spec=SPEC), gpu_only])
    [run] = references.load_runs()
    current = [demo(spec=SPEC)]
    assert {c.tip for c in _comparable(run, current)} == {"T918", "T917"}
    resized = [demo(spec={**SPEC, "gpu": {"n": 128}})]
    assert {c.tip for c in _comparable(run, resized)} == {"T917"}  # the stale T918 reference is not evidence
