"""Grading throughput: this grader vs plain `nbgrader autograde`, same submissions, one run.

    python benchmarks/grading_throughput.py [--assignment 03_building_models] [--n 8] [--workers N] [--repeat R]

Makes N submissions from the bundled samples (cycling through them), grades them with
`python -m grader autograde`'s function (sandboxed, parallel) and with nbgrader's own autograde
(one kernel per submission, every cell executed, one at a time), one after the other on fresh
course directories, and prints both wall times, submissions per minute, the ratio, and whether
the honest submissions got identical scores. Plain nbgrader runs the notebooks as submitted, as
it would in a class.

What is timed: for this grader, one `autograde()` call on a fresh course directory: starting its
workers, grading the assignment's reference solution (a fresh directory has no cached pass), the
N sandboxed gradings, and the gradebook, feedback notebook and ledger writes. For nbgrader, its
`autograde` of each student: kernel start, every cell, the gradebook writes. Neither includes
making the submissions or generating the assignment. With `--repeat R` the two alternate R times
(ours, plain, ours, plain, ...) so that a burst of load on a shared machine hits both, and the
medians are compared.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from grader import course  # noqa: E402
from grader.autograde import autograde  # noqa: E402
from grader.sample_submissions import write_class  # noqa: E402
from benchmarks.record import recording  # noqa: E402

HONEST = ("correct", "other_style", "modulelist_style")


def make_submissions(course_dir: Path, assignment: course.Assignment, n: int) -> dict[str, str]:
    """student id -> sample name."""
    course.prepare(course_dir, assignment)
    return write_class(course_dir, assignment, course_dir / "release" / assignment.id, n)


def plain_nbgrader(course_dir: Path, assignment_id: str, students) -> dict[str, float]:
    from nbgrader.api import Gradebook

    api = course.nbgrader_api(course_dir, **{"Execute.timeout": 600})
    for student in students:
        result = api.autograde(assignment_id, student)
        if not result["success"]:
            print(f"  plain nbgrader failed on {student}: {(result.get('error') or '')[-300:]}")
    with Gradebook(api.coursedir.db_url) as gb:
        return {s.student.id: float(s.score) for s in gb.find_assignment(assignment_id).submissions}


def fresh_course(tmp: Path, name: str, assignment: course.Assignment, submitted: Path) -> Path:
    """A new course directory holding copies of the same submissions (nothing graded, nothing cached)."""
    course_dir = tmp / name
    shutil.copytree(submitted, course_dir / "submitted")
    course.prepare(course_dir, assignment)
    return course_dir


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--assignment", default="03_building_models")
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--repeat", type=int, default=1, help="alternate the two R times and compare medians")
    parser.add_argument("--record", action="store_true", help="also write the figures into docs/measurements.md")
    args = parser.parse_args()
    with recording("grading_throughput", args.record):
        return run(args)


def run(args) -> int:
    assignment = course.find(args.assignment)
    os.environ["COURSE_RECORDS"] = ""
    ours_s, plain_s, same = [], [], True
    with tempfile.TemporaryDirectory(prefix="bench-grading-") as tmp:
        students = make_submissions(Path(tmp) / "made", assignment, args.n)
        honest = [s for s, name in students.items() if name in HONEST]
        for r in range(args.repeat):
            ours_dir = fresh_course(Path(tmp), f"ours{r}", assignment, Path(tmp) / "made" / "submitted")
            plain_dir = fresh_course(Path(tmp), f"plain{r}", assignment, Path(tmp) / "made" / "submitted")

            start = time.perf_counter()
            ours = {o.student: o.score for o in autograde(ours_dir, args.assignment, workers=args.workers,
                                                          report=lambda _: None)}
            ours_s.append(time.perf_counter() - start)
            start = time.perf_counter()
            plain = plain_nbgrader(plain_dir, args.assignment, students)
            plain_s.append(time.perf_counter() - start)
            same = same and all(ours.get(s) == plain.get(s) for s in honest)
            if args.repeat > 1:
                print(f"  run {r + 1}: this grader {ours_s[-1]:.1f} s, plain nbgrader {plain_s[-1]:.1f} s", flush=True)

    ours_m, plain_m = statistics.median(ours_s), statistics.median(plain_s)
    print(f"{args.n} submissions of {args.assignment} on {os.cpu_count()} cores"
          + (f", median of {args.repeat} alternating runs" if args.repeat > 1 else ""))
    print(f"{'grader':<28}{'wall s':>10}{'per minute':>12}")
    print(f"{'this grader (' + str(args.workers) + ' workers)':<28}{ours_m:>10.1f}{60 * args.n / ours_m:>12.1f}")
    print(f"{'plain nbgrader autograde':<28}{plain_m:>10.1f}{60 * args.n / plain_m:>12.1f}")
    print(f"speed-up: {plain_m / ours_m:.1f}x")
    print(f"honest submissions ({len(honest)}): identical scores in every run: {same}")
    for student in sorted(students):
        print(f"  {student:<32} ours {ours.get(student)!s:>5}   plain {plain.get(student)!s:>5}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
