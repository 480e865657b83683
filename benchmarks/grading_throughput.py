"""Grading throughput: this grader vs plain `nbgrader autograde`, same submissions, one run.

    python benchmarks/grading_throughput.py [--assignment 03_building_models] [--n 8] [--workers N]

Makes N submissions from the bundled samples (cycling through them), grades them once with
`python -m grader autograde` (sandboxed, parallel) and once with nbgrader's own autograde
(one kernel per submission, every cell executed, one at a time), and prints both wall times,
submissions per minute, the ratio, and whether the honest submissions got identical scores.
Plain nbgrader runs the notebooks as submitted, as it would in a class.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from grader import course  # noqa: E402
from grader.autograde import autograde  # noqa: E402
from grader.samples import fill, sample_answers  # noqa: E402

HONEST = ("correct", "other_style", "modulelist_style")


def make_submissions(course_dir: Path, assignment: course.Assignment, n: int) -> dict[str, str]:
    """student id -> sample name."""
    course.prepare(course_dir, assignment)
    release = nbformat.read(course_dir / "release" / assignment.id / assignment.notebook_name, as_version=4)
    samples = sorted(sample_answers(assignment).items())
    students = {}
    for i in range(n):
        name, answers = samples[i % len(samples)]
        student = f"s{i:03d}_{name}"
        folder = course_dir / "submitted" / student / assignment.id
        folder.mkdir(parents=True)
        nbformat.write(fill(release, answers), folder / assignment.notebook_name)
        students[student] = name
    return students


def plain_nbgrader(course_dir: Path, assignment_id: str, students) -> dict[str, float]:
    from nbgrader.api import Gradebook

    api = course.nbgrader_api(course_dir, **{"Execute.timeout": 600})
    for student in students:
        result = api.autograde(assignment_id, student)
        if not result["success"]:
            print(f"  plain nbgrader failed on {student}: {(result.get('error') or '')[-300:]}")
    with Gradebook(api.coursedir.db_url) as gb:
        return {s.student.id: float(s.score) for s in gb.find_assignment(assignment_id).submissions}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--assignment", default="03_building_models")
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    args = parser.parse_args()
    assignment = course.find(args.assignment)
    os.environ["COURSE_RECORDS"] = ""
    with tempfile.TemporaryDirectory(prefix="bench-grading-") as tmp:
        ours_dir, plain_dir = Path(tmp) / "ours", Path(tmp) / "plain"
        students = make_submissions(ours_dir, assignment, args.n)
        shutil.copytree(ours_dir / "submitted", plain_dir / "submitted")
        course.prepare(plain_dir, assignment)

        start = time.perf_counter()
        ours = {o.student: o.score for o in autograde(ours_dir, args.assignment, workers=args.workers,
                                                      report=lambda _: None)}
        ours_s = time.perf_counter() - start
        start = time.perf_counter()
        plain = plain_nbgrader(plain_dir, args.assignment, students)
        plain_s = time.perf_counter() - start

    honest = [s for s, name in students.items() if name in HONEST]
    same = all(ours.get(s) == plain.get(s) for s in honest)
    print(f"{args.n} submissions of {args.assignment} on {os.cpu_count()} cores")
    print(f"{'grader':<28}{'wall s':>10}{'per minute':>12}")
    print(f"{'this grader (' + str(args.workers) + ' workers)':<28}{ours_s:>10.1f}{60 * args.n / ours_s:>12.1f}")
    print(f"{'plain nbgrader autograde':<28}{plain_s:>10.1f}{60 * args.n / plain_s:>12.1f}")
    print(f"speed-up: {plain_s / ours_s:.1f}x")
    print(f"honest submissions ({len(honest)}): identical scores: {same}")
    for student in sorted(students):
        print(f"  {student:<32} ours {ours.get(student)!s:>5}   plain {plain.get(student)!s:>5}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
