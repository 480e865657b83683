"""The class device report at scale: a made-up class of N submissions, gathered and written.

    python benchmarks/class_report.py [--submissions 2000] [--workers 2] [--pad-kb 300]

Each submission is a released notebook (00_measure_first, 01_tensors_devices or 07_speed_knobs, in
turn) carrying the records of one of the bundled runs (grader/sample_records: a CPU and an H200
QUICK run; references/: the H100 full run), its times scaled by a random factor per learner as on
a class's many machines of a few models, padded with --pad-kb of base64 output as an executed
notebook's figures are. Every tenth learner's notebook also holds a forged record. The gradebook is
SQLite. Printed: the time to list and read the submissions (``gather``, --workers processes) and to
write the pages and the CSV, and the whole, which should stay under a minute on 2 cores.
"""
from __future__ import annotations

import argparse
import base64
import dataclasses
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import nbformat  # noqa: E402

from grader import class_report, course  # noqa: E402
from grader.coursedir import CourseDir  # noqa: E402
from grader.sample_submissions import carry, enroll, load_runs  # noqa: E402
from utils import references  # noqa: E402
from utils.comparison import group_records  # noqa: E402
from utils.paths import REPO_ROOT  # noqa: E402

NOTEBOOKS = ("00_measure_first", "01_tensors_devices", "07_speed_knobs")
RUNS = (REPO_ROOT / "grader/sample_records/cpu-quick", REPO_ROOT / "grader/sample_records/h200-quick",
        references.REFERENCES / "h100-2026-11-25")


def learner_records(run: list, notebook: str, factor: float, forged: bool) -> list:
    """A run's records of one notebook as another machine of its model measured them: every time
    times ``factor`` (speed-ups unchanged); ``forged``: one variant claims twice its speed-up."""
    mine = []
    for group in group_records([r for r in run if r.notebook == notebook]):
        for r in group:
            scaled = dataclasses.replace(r, median_s=r.median_s * factor, round_medians=[m * factor for m in r.round_medians])
            mine.append(scaled)
    if forged and len(mine) > 1:
        mine[1] = dataclasses.replace(mine[1], speedup=(mine[1].speedup or 1) * 2)
    return mine


def make_class(root: Path, n: int, pad_kb: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    runs = load_runs(RUNS)
    released = {a: nbformat.read(course.NOTEBOOKS / a / f"{a}.ipynb", as_version=4) for a in NOTEBOOKS}
    padding = nbformat.v4.new_output("display_data", data={
        "image/png": base64.b64encode(rng.randbytes(pad_kb * 768)).decode("ascii"), "text/plain": "<Figure>"})
    pairs = []
    for i in range(n):
        student, notebook = f"learner{i // len(NOTEBOOKS):04d}", NOTEBOOKS[i % len(NOTEBOOKS)]
        run = runs[(i // len(NOTEBOOKS)) % len(runs)]
        nb = carry(nbformat.from_dict(released[notebook]),
                   learner_records(run, notebook, rng.uniform(0.7, 1.5), forged=i % 10 == 0))
        nb.cells.append(nbformat.v4.new_code_cell("plt.show()", outputs=[padding]))
        target = root / "submitted" / student / notebook
        target.mkdir(parents=True, exist_ok=True)
        (target / f"{notebook}.ipynb").write_text(json.dumps(nb), encoding="utf-8")  # nbformat.write validates: slow
        pairs.append((student, notebook))
    enroll(CourseDir(root), pairs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--submissions", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--pad-kb", type=int, default=300, help="base64 output per notebook, as its figures")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="class-report-") as folder:
        course_dir = CourseDir(Path(folder))
        start = time.perf_counter()
        make_class(course_dir.path, args.submissions, args.pad_kb)
        size = sum(p.stat().st_size for p in course_dir.path.glob("submitted/*/*/*.ipynb"))
        print(f"made {args.submissions} submissions ({size / 2**20:.0f} MiB) in {time.perf_counter() - start:.1f} s "
              f"(not timed below); {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
        start = time.perf_counter()
        subs = class_report.gather(course_dir, args.workers)
        gathered = time.perf_counter() - start
        class_report.write(subs, course_dir.path / "class_report")
        total = time.perf_counter() - start
        rejected = class_report.rejections(subs)
        print(f"gather ({args.workers} workers): {gathered:.1f} s; write: {total - gathered:.1f} s; "
              f"total: {total:.1f} s for {len(subs)} submissions, {sum(len(s.records) for s in subs)} records, "
              f"left out: {dict(rejected)}; load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
