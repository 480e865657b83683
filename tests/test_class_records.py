"""Measurements travel with the submission: cards carry their records into the notebook, and the
grader reads them back from a submitted file as untrusted data (grader/class_records.py)."""
import json
import os
import time
import tracemalloc
from collections import Counter
from dataclasses import asdict, replace

import nbformat
import pytest
from IPython.core.formatters import DisplayFormatter

from grader import class_records, course
from grader.autograde import autograde
from grader.sample_submissions import fill, solution_answers
from submissions import LIMITS, prepared_release, submit
from utils import records

TIPS = {"T005", "T013"}


def displayed(obj) -> dict:
    """What Jupyter saves of a cell whose last line is ``obj``."""
    data, _ = DisplayFormatter().format(obj)
    return data


def write_notebook(path, datas: list) -> None:
    """A notebook whose cells each display one output's data (checked by nbformat: a valid file)."""
    nb = nbformat.v4.new_notebook()
    for i, data in enumerate(datas, start=1):
        cell = nbformat.v4.new_code_cell("card", execution_count=i)
        cell.outputs = [nbformat.v4.new_output("execute_result", data=data, execution_count=i)]
        nb.cells.append(cell)
    nbformat.write(nb, path)


def test_a_card_carries_its_records_as_the_jsonl_holds_them(quick_bench, records_file, tmp_path):
    options = quick_bench.Options(why="T005-threads", facts={"threads": 1}, memory=False)
    card = quick_bench.compare("T005", ("slow", lambda: sum(range(2000))), ("fast", lambda: sum(range(500))),
                               options=replace(options, rate=("GB/s", 1e-6)))
    sweep = quick_bench.sweep("T005", "n", [100, 400], lambda n: [("slow", lambda: sum(range(2 * n))),
                                                                  ("fast", lambda: sum(range(n)))],
                              rate=("GB/s", lambda n: n / 1e9), options=replace(options, title="sums"))
    datas = [displayed(card), displayed(sweep)]
    # The learner's view is unchanged: the same HTML and text, the records beside them.
    assert datas[0]["text/html"] == card._repr_html_() and datas[0]["text/plain"] == repr(card)
    assert set(datas[1]) == {"text/html", "text/plain", records.MIME}
    path = tmp_path / "submitted.ipynb"
    write_notebook(path, datas)
    found = class_records.read(path, TIPS)
    assert found.rejected == Counter()
    assert found.records == records.load(records_file) and len(found.records) == 6
    assert {(r.device, r.torch, r.quick) for r in found.records} == {("cpu", card.torch, True)}


def test_nothing_recorded_nothing_carried(quick_bench, records_file):
    card = quick_bench.compare("T005", ("a", lambda: 1), ("b", lambda: 2), options=quick_bench.Options(
        record=False, memory=False, why="T005-threads", facts={"threads": 1}, rate=("GB/s", 1e-6)))
    unmeasured = quick_bench.compare("T005", ("a", lambda: 1), ("b", lambda: 2),
                                     options=quick_bench.Options(needs="cuda", why="T005-threads"))
    assert records.MIME not in displayed(card)
    if type(unmeasured).__name__ == "Unmeasured":  # on a CUDA machine it was measured
        assert records.MIME not in displayed(unmeasured)


def row(comparison="c1", variant="base", role="baseline", median_s=2e-3, speedup=1.0, **kw) -> dict:
    record = records.Record(comparison=comparison, tip="T005", title="t", variant=variant, role=role, device="cpu",
                            device_name="CPU", median_s=median_s, iqr_s=1e-4, runs=20, speedup=speedup,
                            torch="2.5.1", quick=True, round_medians=[median_s, median_s], **kw)
    return json.loads(json.dumps(asdict(record)))


def pair(comparison: str, **variant) -> list[dict]:
    """A baseline (2 ms) and a consistent variant (1 ms, 2x); ``variant`` overrides the variant's fields."""
    return [row(comparison), {**row(comparison, "tip", "variant", 1e-3, 2.0), **variant}]


def payload(items) -> dict:
    return {records.MIME: {"version": 1, "records": items}}


def test_forged_and_broken_records_are_left_out_and_counted(tmp_path):
    ten_kb = "x" * 10_000
    datas = [
        payload(pair("ok")),                                           # 2 accepted
        payload(pair("ok")),                                           # the card shown twice
        payload(pair("strtime", median_s="fast")),
        payload(pair("nan", median_s=float("nan"))),
        payload(pair("negative", iqr_s=-1.0)),
        payload(pair("huge", peak_bytes=10**4000)),                    # no float holds it
        payload(pair("forged", speedup=5.0)),                          # the baseline stays
        payload(pair("boolean", runs=True)),
        payload(pair("role", role="winner")),
        payload([{**r, "tip": "T999"} for r in pair("unknown")]),
        payload([{**r, "device": ten_kb} for r in pair("long")]),
        payload([r for r in pair("orphan") if r["role"] == "variant"]),
        payload([row("missing"), {k: v for k, v in pair("missing")[1].items() if k != "role"}]),
        payload([row("mixed"), {**pair("mixed")[1], "device": "cuda:0"}]),
        payload(["a string", 7, None]),
        {records.MIME: "not an object"},
        {records.MIME: {"records": {"not": "a list"}}},
        {"text/plain": "an ordinary output", "application/json": {"records": [row("elsewhere")]}},
    ]
    path = tmp_path / "forged.ipynb"
    write_notebook(path, datas)
    found = class_records.read(path, TIPS)
    assert [(r.comparison, r.variant) for r in found.records] == [
        ("ok", "base"), ("ok", "tip"), ("strtime", "base"), ("nan", "base"), ("negative", "base"),
        ("huge", "base"), ("forged", "base"), ("boolean", "base"), ("role", "base"), ("missing", "base"),
        ("mixed", "base")]
    assert found.rejected == Counter({
        "duplicate": 2, "wrong type": 5, "implausible value": 4, "speed-up contradicts medians": 1,
        "unknown tip": 2, "oversized record": 2, "no baseline": 1, "missing field": 1,
        "inconsistent comparison": 1, "malformed payload": 2})


@pytest.mark.parametrize("content,reason", [
    (b"this is not JSON", "not a notebook"),
    (b"\xff\xfe{}", "not a notebook"),
    (b"[" * 100_000 + b"]" * 100_000, "not a notebook"),
    (b'{"cells": [{"outputs": [{"data": {"x": ' + b"9" * 10_000 + b"}}]}]}", "not a notebook"),
    (b'{"cells": "none"}', "not a notebook"),
    (b"[]", "not a notebook"),
])
def test_a_file_that_is_not_a_notebook_is_refused_whole(tmp_path, content, reason):
    path = tmp_path / "broken.ipynb"
    path.write_bytes(content)
    assert class_records.read(path, TIPS) == class_records.Found([], Counter({reason: 1}))


def test_what_is_not_a_file_is_refused_without_opening_it(tmp_path):
    fifo = tmp_path / "fifo.ipynb"
    os.mkfifo(fifo)   # opening it would wait for a writer forever
    assert class_records.read(fifo, TIPS).rejected == Counter({"not a file": 1})
    assert class_records.read(tmp_path, TIPS).rejected == Counter({"not a file": 1})


def test_fifty_megabytes_of_outputs_are_refused_quickly_without_reading_them(tmp_path):
    path = tmp_path / "huge.ipynb"
    write_notebook(path, [payload(pair("ok")), {"text/plain": "x" * 50_000_000}])
    tracemalloc.start()
    start = time.perf_counter()
    found = class_records.read(path, TIPS)
    seconds, (_, peak) = time.perf_counter() - start, tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert found == class_records.Found([], Counter({"oversized notebook": 1}))
    assert seconds < 0.5 and peak < 1_000_000, (seconds, peak)


def test_a_file_that_grows_past_the_cap_after_its_size_was_read_is_still_bounded(tmp_path, monkeypatch):
    path = tmp_path / "growing.ipynb"
    write_notebook(path, [payload(pair("ok"))])
    size = path.stat().st_size
    assert len(class_records.read(path, TIPS, max_bytes=size).records) == 2
    with open(path, "a") as f:   # stat() below says the old size; the read finds more
        f.write(" " * 10)
    monkeypatch.setattr(type(path), "stat", lambda p, **kw: os.stat_result((0o100644, 0, 0, 1, 0, 0, size, 0, 0, 0)))
    assert class_records.read(path, TIPS, max_bytes=size).rejected == Counter({"oversized notebook": 1})


def test_too_many_records_are_counted_not_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(class_records, "MAX_RECORDS", 3)
    path = tmp_path / "many.ipynb"
    write_notebook(path, [payload(pair("a") + pair("b"))])
    found = class_records.read(path, TIPS)
    assert len(found.records) == 3 and found.rejected == Counter({"too many records": 1})


def test_the_course_tips_are_those_it_measures():
    tips = class_records.course_tips()
    assert {"T005", "T087", "T105"} <= tips and "T001" not in tips   # T001 reports versions: nothing timed
    assert all(len(t) == 4 and t.startswith("T") for t in tips)


def test_only_a_card_of_this_runs_records_carries_them():
    """A rank's records, shown in the notebook, travel with it; a reference run's, shown, do not."""
    from utils.present import Result

    group = [records.from_json(r) for r in pair("rank0")]
    assert Result.recorded(group)._repr_mimebundle_()[records.MIME]["records"] == pair("rank0")
    assert Result.from_records(group)._repr_mimebundle_() == {}


def test_records_change_no_grade_and_stay_readable_in_the_submitted_file(tmp_path):
    """The grader reads submitted/ and never writes there (the autograded notebook is rebuilt from the
    release, without outputs): the records are read from the file as collected, and even a forgery the
    reader accepts (consistent numbers) or refuses changes no score."""
    aid = "00_measure_first"
    release, answers = prepared_release(tmp_path, aid), solution_answers(course.find(aid))
    forged = [row("forged", median_s=1.0, speedup=1.0), row("forged", "tip", "variant", 1e-4, 1e4),
              {**row("long"), "device": "x" * 10_000}]
    students = {"plain": [], "honest": pair("honest"), "forger": forged}
    for student, items in students.items():
        nb = fill(release, answers)
        card = next(c for c in nb.cells if c.cell_type == "code" and "bench.compare" in c.source)
        card.outputs = [nbformat.v4.new_output("display_data", data=payload(items))] if items else []
        submit(tmp_path, student, aid, nb)
    files = {s: tmp_path / "submitted" / s / aid / f"{aid}.ipynb" for s in students}
    before = {s: f.read_bytes() for s, f in files.items()}
    outcomes = {o.student: o for o in autograde(tmp_path, aid, workers=1, report=lambda _: None, limits=LIMITS)}
    assert {s: (o.score, o.max_score) for s, o in outcomes.items()} == {s: (outcomes["plain"].max_score,) * 2
                                                                        for s in students}
    assert {s: f.read_bytes() for s, f in files.items()} == before
    found = {s: class_records.read(f, TIPS) for s, f in files.items()}
    assert [len(found[s].records) for s in students] == [0, 2, 2]
    assert found["forger"].rejected == Counter({"oversized record": 1})
