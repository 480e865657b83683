"""Command line: ``python -m grader {assignments,generate,samples,autograde,export,feedback,class-report}``."""
from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from . import course, database
from .coursedir import CourseDir
from .errors import CourseError
from .sandbox import Limits
from utils.paths import REPO_ROOT


def _folder(value: str) -> Path:
    return Path(value).expanduser().resolve()


def _shard(value: str) -> tuple[int, int]:
    """``K/N`` -> (K, N), shard K of N."""
    match = re.fullmatch(r"(\d+)/(\d+)", value.strip(), re.ASCII)
    if not match or not int(match[1]) < int(match[2]):
        raise argparse.ArgumentTypeError(f"{value!r} is not K/N with K from 0 to N-1 (e.g. 0/4: shard 0 of 4)")
    return int(match[1]), int(match[2])


def _at_least_one(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of learners, 1 or more")
    return number


MAX_DEADLINE_S = 3600


def _deadline(value: str) -> int:
    """Seconds each answer cell and each exercise's check may run: a whole number from 1 to an hour."""
    if not re.fullmatch(r"\d+", value.strip(), re.ASCII) or not 1 <= int(value) <= MAX_DEADLINE_S:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of seconds from 1 to {MAX_DEADLINE_S}")
    return int(value)


FORMGRADER = "run `jupyter lab` in {dir} (add --allow-root as root) and open /formgrader"


def cmd_assignments(args) -> int:
    for assignment in course.assignments():
        print(f"{assignment.id}\t{assignment.release_path.relative_to(REPO_ROOT)}")
    return 0


def cmd_generate(args) -> int:
    for path in course.generate_release():
        print(f"generated {path.relative_to(REPO_ROOT)}")
    return 0


def cmd_samples(args) -> int:
    # nbformat: loaded by the commands that read notebooks, not by --help
    from .sample_submissions import DEMO, load_runs, write_demo, write_samples

    if args.demo:
        chosen = [course.find(a) for a in DEMO if args.assignment in (None, a)]
        if not chosen:
            raise CourseError(f"{args.assignment} is not in the demo class ({', '.join(DEMO)})")
    else:
        chosen = [course.find(args.assignment)] if args.assignment else course.assignments()
    runs = load_runs(args.records or [])
    for assignment in chosen:
        course.prepare(args.course_dir, assignment)
        release = args.course_dir.path / "release" / assignment.id
        if args.demo:
            wrote = [f"{s} ({n})" for s, n in write_demo(args.course_dir.path, assignment, release, runs).items()]
        else:
            wrote = write_samples(args.course_dir.path, assignment, release, runs)
        print(f"{assignment.id}: wrote submissions of {', '.join(wrote)}")
    return 0


def _say(line: str) -> None:
    """A progress line, printed above autograde's progress bar (when there is one) and at once."""
    from tqdm import tqdm

    tqdm.write(line, file=sys.stdout)
    sys.stdout.flush()


def cmd_autograde(args) -> int:
    print(f"autograde: loading the grader (torch, nbgrader) for {args.course_dir.path}", flush=True)
    from .autograde import GradingInterrupted, autograde  # seconds of imports: after the line above, not before

    try:
        outcomes = autograde(args.course_dir, args.assignment, args.student, args.workers, force=args.force,
                             isolate=not args.no_sandbox, report=_say, shard=args.shard,
                             limits=Limits.with_deadline(args.deadline), warm=not args.cold)
    except GradingInterrupted as exc:
        stored = sum(1 for o in exc.outcomes if not (o.error or o.skipped))
        print(f"interrupted by {exc}: grading stopped and every sandbox ended; {stored} submission(s) graded "
              "before it are stored. Run the same command again to grade the rest.", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted before grading started: nothing was graded", file=sys.stderr)
        return 130
    failed = [o for o in outcomes if o.error]
    kept = sum(o.skipped for o in outcomes)
    print(f"{len(outcomes)} submission(s): {len(outcomes) - len(failed) - kept} graded now, {kept} kept unchanged, "
          f"{len(failed)} not graded; gradebook: {database.shown(args.course_dir)}")
    waiting = [o for o in outcomes if o.pending]
    if waiting:
        print(f"{len(waiting)} submission(s) have written answers ({sum(o.pending for o in waiting):g} points in all) "
              "that the autograder leaves to the instructor: grade them in formgrader's Manual Grading ("
              + FORMGRADER.format(dir=args.course_dir.path) + (", with GRADER_DB_URL set" if args.db_url else "") + ")")
    blank = [o for o in outcomes if o.blank]
    if blank:
        print(f"{len(blank)} submission(s) left their written answers blank: they score 0 there "
              f"({sum(o.blank for o in blank):g} points in all) and need no manual grade")
    if not outcomes:
        print("no submissions found" + (" in shard {}/{}".format(*args.shard) if args.shard else ""), file=sys.stderr)
    return 1 if failed else 0


def _require_gradebook(course_dir: CourseDir) -> None:
    if not database.exists(course_dir):
        raise CourseError(f"no gradebook at {database.shown(course_dir)}: run `python -m grader autograde "
                          f"--course-dir {course_dir.path}` first")


def cmd_export(args) -> int:
    from nbgrader.api import Gradebook
    from nbgrader.plugins import CsvExportPlugin

    _require_gradebook(args.course_dir)
    args.to.parent.mkdir(parents=True, exist_ok=True)
    with Gradebook(database.url(args.course_dir)) as gb:
        known = [a.name for a in gb.assignments]
        unknown = sorted(set(args.assignment or []) - set(known))
        if unknown:
            raise CourseError(f"no assignment {', '.join(unknown)} in the gradebook; it has: {', '.join(known) or 'none'}")
        chosen = args.assignment or known
        CsvExportPlugin(to=str(args.to), assignment=chosen).export(gb)
        submitted = {(a.name, sub.student_id) for a in gb.assignments for sub in a.submissions}
        missing = [f"{s.id}/{name}" for name in chosen for s in gb.students if (name, s.id) not in submitted]
    print(f"wrote {args.to}: {len(chosen)} assignment(s)")
    if missing:  # nbgrader's CSV gives them 0.0, as if graded
        print(f"{len(missing)} row(s) score 0.0 because nothing was submitted, not a graded zero: "
              + ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else ""))
    return 0


def _feedback_one(course_dir: CourseDir, assignment_id: str, student_id: str) -> str | None:
    """nbgrader's feedback for one student's assignment; the error text if it failed."""
    result = course.nbgrader_api(course_dir).generate_feedback(assignment_id, student_id)
    return None if result["success"] else str(result.get("error") or result.get("log"))


def cmd_feedback(args) -> int:
    """nbgrader generate_feedback, one process per core: each page is an independent conversion."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    _require_gradebook(args.course_dir)
    autograded = args.course_dir.path / "autograded"
    folders = [p for p in autograded.glob("*/*") if p.is_dir()] if autograded.is_dir() else []
    jobs = sorted((p.name, p.parent.name) for p in folders
                  if args.assignment in (None, p.name) and args.student in (None, p.parent.name))
    if not jobs and (args.assignment or args.student):
        asked = " and ".join(f"--{k} {v}" for k, v in (("assignment", args.assignment), ("student", args.student)) if v)
        raise CourseError(f"no autograded submission in {autograded} matches {asked}: check the ids, or run autograde first")
    status = 0
    with ProcessPoolExecutor(max(1, min(args.workers, len(jobs))), mp_context=get_context("spawn")) as pool:
        errors = pool.map(_feedback_one, [args.course_dir] * len(jobs), *zip(*jobs)) if jobs else []
        for done, ((assignment_id, student_id), error) in enumerate(zip(jobs, errors), start=1):
            page = Path("feedback") / student_id / assignment_id / f"{assignment_id}.html"
            if error:
                print(f"{student_id} {assignment_id}: feedback failed: {error}", file=sys.stderr)
                status = 1
            else:
                print(f"[{done}/{len(jobs)}] wrote {page}")
    return status


def cmd_class_report(args) -> int:
    from . import class_report

    if not args.course_dir.path.is_dir():
        raise CourseError(f"{args.course_dir.path} is not a course directory (no such folder)")
    _require_gradebook(args.course_dir)
    subs = class_report.gather(args.course_dir, args.workers, tuple(args.also_from or ()))
    out = args.out or args.course_dir.path / "class_report"
    written = class_report.write(subs, out, args.min_learners)
    rejected = class_report.rejections(subs)
    print(f"{len(subs)} submission(s), {sum(len(s.records) for s in subs)} record(s) accepted"
          + (f", left out: {', '.join(f'{k} {n}' for k, n in sorted(rejected.items()))}" if rejected else "")
          + ("" if subs else " (the gradebook lists no submissions: an empty report)"))
    for path in written:
        print(f"wrote {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m grader", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("assignments", help="list assignment ids and their released notebooks").set_defaults(func=cmd_assignments)
    sub.add_parser("generate", help="regenerate notebooks/ from solutions/").set_defaults(func=cmd_generate)

    def with_course_dir(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--course-dir", type=_folder, required=True, help="nbgrader course directory")
        return p

    def with_db_url(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
        p.add_argument("--db-url", default=os.environ.get("GRADER_DB_URL") or None,
                       help=f"the gradebook, shared by every grader: {database.URL_FORM} (default: $GRADER_DB_URL, "
                            "which keeps the password out of the process list, else DIR/gradebook.db)")
        return p

    p = with_course_dir("samples", "write the bundled sample submissions into DIR/submitted")
    p.add_argument("--assignment")
    p.add_argument("--demo", action="store_true",
                   help="only a small demo class: four students, each with a correct, a wrong, a broken and an "
                        "other-style submission, over the four exercises the course is built around")
    p.add_argument("--records", action="append", metavar="RUN",
                   help="a run's records (a folder with measurements.jsonl, or the file; repeat for several): "
                        "the samples carry them in turn, as if each had been run on that run's device")
    p.set_defaults(func=cmd_samples)
    p = with_db_url(with_course_dir("autograde", "grade DIR/submitted/<student>/<assignment>/ into the gradebook"))
    p.add_argument("--assignment")
    p.add_argument("--student")
    p.add_argument("--workers", type=int, default=os.cpu_count(), help="parallel graders (default: cores)")
    p.add_argument("--force", action="store_true", help="grade again even submissions that are unchanged")
    p.add_argument("--no-sandbox", action="store_true",
                   help="UNSAFE: run student code without bubblewrap isolation (rlimits and deadline only)")
    p.add_argument("--cold", action="store_true",
                   help="a fresh sandbox (a new Python that imports torch again) for each submission, instead of "
                        "a child of each worker's warm sandbox: slower; the same isolation and the same scores")
    p.add_argument("--shard", type=_shard, metavar="K/N",
                   help="grade only shard K of N (K = 0..N-1, e.g. a Kubernetes Indexed Job's completion index): "
                        "the students whose id hashes to K modulo N")
    p.add_argument("--deadline", type=_deadline, default=Limits.cell_s, metavar="SECONDS",
                   help=f"seconds each answer cell and each exercise's check may run (default: {Limits.cell_s}); "
                        "the whole notebook gets 3 times as long, at least the default "
                        f"{Limits.wall_s:g} s. Add --force to regrade submissions graded under another deadline")
    p.set_defaults(func=cmd_autograde)
    p = with_db_url(with_course_dir("export", "write the gradebook as nbgrader's CSV"))
    p.add_argument("--to", type=lambda v: Path(v).expanduser().resolve(), required=True)
    p.add_argument("--assignment", action="append",
                   help="only this assignment's rows (repeat for several; default: every assignment)")
    p.set_defaults(func=cmd_export)
    p = with_db_url(with_course_dir("feedback", "write per-student HTML feedback"))
    p.add_argument("--assignment", help="only this assignment's pages (default: every autograded one)")
    p.add_argument("--student", help="only this student's pages")
    p.add_argument("--workers", type=int, default=os.cpu_count(), help="parallel conversions (default: cores)")
    p.set_defaults(func=cmd_feedback)
    p = with_db_url(with_course_dir("class-report", "one HTML page of what the class measured, by device, and a CSV"))
    p.add_argument("--out", type=lambda v: Path(v).expanduser().resolve(),
                   help="the folder for class_report.html, students.html and class_records.csv (default: DIR/class_report)")
    p.add_argument("--also-from", type=_folder, action="append", metavar="SHARD_DIR",
                   help="a sharded class: another shard's course directory, where the notebooks of the submissions "
                        "it graded are (repeat for each; the gradebook is --db-url's)")
    p.add_argument("--workers", type=int, default=min(os.cpu_count() or 1, 8), help="processes reading notebooks")
    p.add_argument("--min-learners", type=_at_least_one, default=3, metavar="N",
                   help="show a device model's figures on the class page only where at least N learners measured "
                        "them (default 3: one learner's figures are theirs); the learners' page and the CSV keep all")
    p.set_defaults(func=cmd_class_report)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if hasattr(args, "course_dir"):  # the folder becomes the CourseDir the commands pass on, with --db-url
        args.course_dir = CourseDir(args.course_dir, getattr(args, "db_url", None))
    if getattr(args, "workers", 1) is not None and getattr(args, "workers", 1) < 1:
        print("error: --workers must be at least 1", file=sys.stderr)
        return 2
    try:
        return args.func(args)
    except CourseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
