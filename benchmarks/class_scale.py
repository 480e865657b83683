"""A sharded class, measured: made-up submissions of every assignment graded into one PostgreSQL
gradebook by N shards at once (N processes, one worker each, each with its own course directory as
on N machines), and the cost per submission in core-seconds.

    python benchmarks/class_scale.py [--per-assignment 17] [--shards 2] [--only 03_building_models ...] [--cold]

``--cold``: each assignment graded twice, side by side: with warm sandboxes (the default) and with a
cold sandbox per submission (``autograde --cold``, a fresh Python each), and the ratio printed.

The submissions cycle through each assignment's bundled samples (honest answers in several styles,
wrong ones, broken ones, cheats). The server is a throwaway local PostgreSQL (grader.pgserver).
For each assignment the shards run together; the script reads each shard's CPU time (user + system,
its sandboxed graders included) from a control group of its own (run as root): CPU time, unlike
wall time, hardly grows when other work shares the machine. Printed per assignment:

- core-s: the CPU time of all shards together, fixed costs included (loading torch and nbgrader,
  checking the reference solution once per shard, the gradebook writes);
- core-s per submission: (core-s of the class - core-s of a --small class) / (difference in size),
  the cost a bigger class multiplies; fixed core-s: the rest.

Then the estimate for a class of --students students, each submitting every measured assignment.
The machine may be shared: the load average before and after is printed beside the figures.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from grader import course, pgserver  # noqa: E402
from grader.sample_submissions import write_class  # noqa: E402
from benchmarks.record import recording  # noqa: E402
from utils.tables import text_table  # noqa: E402
from utils.paths import REPO_ROOT  # noqa: E402

LINE = re.compile(r"\] (\S+) (\S+): .* in ([0-9.]+) s")


class CpuGroup:
    """A control group whose CPU time counts every process started in it and all their descendants,
    waited for or not (the graders' sandboxes are killed, so wait4's rusage misses them). cgroup v2,
    else v1's cpuacct; needs root."""

    V2, V1 = Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/cpuacct")

    def __init__(self, name: str):
        v2 = (self.V2 / "cgroup.controllers").exists()
        self.path = (self.V2 if v2 else self.V1) / f"class-scale-{os.getpid()}-{name}"
        self.path.mkdir()
        self.read = ((lambda: int(dict(line.split() for line in (self.path / "cpu.stat").read_text().splitlines())
                                  ["usage_usec"]) / 1e6) if v2
                     else (lambda: int((self.path / "cpuacct.usage").read_text()) / 1e9))

    def join(self) -> None:
        """Put the calling process in the group (from Popen's preexec_fn: the child, before exec)."""
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def close(self) -> None:
        for _ in range(50):  # the last sandboxes may take a moment to exit
            try:
                return self.path.rmdir()
            except OSError:
                time.sleep(0.1)


@dataclass
class Shard:
    process: subprocess.Popen
    group: CpuGroup
    started: float
    output: str = ""
    core_s: float = 0.0
    wall_s: float = 0.0


def start_shard(course_dir: Path, assignment_id: str, k: int, n: int, url: str, cold: bool) -> Shard:
    command = [sys.executable, "-m", "grader", "autograde", "--course-dir", str(course_dir), "--assignment",
               assignment_id, "--shard", f"{k}/{n}", "--workers", "1", *(["--cold"] if cold else [])]
    group = CpuGroup(f"{assignment_id}-{course_dir.parent.parent.name}-{course_dir.parent.name}-{k}")
    process = subprocess.Popen(command, env={**os.environ, "GRADER_DB_URL": url}, cwd=REPO_ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=group.join)
    return Shard(process, group, time.perf_counter())


def finish(shard: Shard) -> Shard:
    """Wait for the shard; its CPU time is its group's: it and every process it started."""
    shard.output = shard.process.communicate()[0]
    shard.wall_s = time.perf_counter() - shard.started
    time.sleep(0.2)  # processes the shard killed on its way out finish exiting
    shard.core_s = shard.group.read()
    shard.group.close()
    return shard


def grade(root: Path, assignment: course.Assignment, students: int, shards: int, url: str,
          cold: bool) -> tuple[float, float]:
    """Grade a made-up class of ``students`` with ``shards`` shards at once: (core-seconds, wall seconds)."""
    dirs = [root / f"shard{k}" for k in range(shards)]
    write_class(dirs[0], assignment, course.NOTEBOOKS / assignment.id, students, prefix=f"{root.name}-")
    for folder in dirs[1:]:
        shutil.copytree(dirs[0] / "submitted", folder / "submitted")
    done = [finish(shard) for shard in [start_shard(folder, assignment.id, k, shards, url, cold)
                                        for k, folder in enumerate(dirs)]]
    graded = sum(len(LINE.findall(shard.output)) for shard in done)
    if any(shard.process.returncode not in (0, 1) for shard in done) or graded != students:
        # exit status 1: some submission failed a check, as wrong answers do
        raise SystemExit(f"{assignment.id}: {graded} of {students} graded:\n" +
                         "\n".join(shard.output[-2000:] for shard in done))
    return sum(shard.core_s for shard in done), max(shard.wall_s for shard in done)


def measure(root: Path, assignment: course.Assignment, n: int, small: int, shards: int, urls: dict,
            cold: bool = False) -> dict:
    """The class of n, and a class of ``small`` beside it: the difference is what a submission costs."""
    mode = "cold" if cold else "warm"
    core_s, wall_s = grade(root / mode / assignment.id / "class", assignment, n, shards, urls[f"{mode}-class"], cold)
    small_core_s, _ = grade(root / mode / assignment.id / "small", assignment, small, shards, urls[f"{mode}-small"],
                            cold)
    per_submission = (core_s - small_core_s) / (n - small)
    return {"assignment": assignment.id, "sandbox": mode, "submissions": n, "wall s": wall_s, "core-s": core_s,
            "submissions per core-s": n / core_s, "core-s per submission": per_submission,
            "fixed core-s": core_s - n * per_submission}


def estimate(rows: list[dict], students: int, shards: int) -> str:
    marginal = sum(r["core-s per submission"] for r in rows)   # one student, every measured assignment
    fixed = sum(r["fixed core-s"] for r in rows)               # per run of `shards` shards
    total = students * marginal + fixed
    worst = max(rows, key=lambda r: r["core-s per submission"])
    return (f"{students} students x {len(rows)} assignment(s): {students} x {marginal:.1f} core-s + {fixed:.0f} "
            f"core-s fixed = {total:,.0f} core-seconds ({total / 3600:.1f} core-hours: {total / 3600 / shards:.1f} h "
            f"on {shards} cores like these). Costliest per submission: {worst['assignment']} "
            f"({worst['core-s per submission']:.2f} core-s).")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-assignment", type=int, default=17, help="submissions per assignment")
    parser.add_argument("--small", type=int, default=3, help="the small class beside it, for the fixed costs")
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--students", type=int, default=2000, help="class size for the estimate")
    parser.add_argument("--only", nargs="+", metavar="ASSIGNMENT", help="these assignments (default: all)")
    parser.add_argument("--cold", action="store_true", help="also grade each with a cold sandbox per submission")
    parser.add_argument("--record", action="store_true", help="also write the figures into docs/measurements.md")
    args = parser.parse_args()
    if args.shards < 1 or not 0 <= args.small < args.per_assignment:
        parser.error("need --shards >= 1 and 0 <= --small < --per-assignment")
    with recording("class_scale", args.record):
        return run(args)


def run(args) -> int:
    assignments = [course.find(a) for a in args.only] if args.only else course.assignments()
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="class-scale-") as tmp, pgserver.local_server() as server:
        modes = (False, True) if args.cold else (False,)
        urls = {f"{m}-{size}": server.database(f"{m}_{size}") for m in ("warm", "cold") for size in ("class", "small")}
        for assignment in assignments:
            for cold in modes:   # side by side, so that a burst of load hits both
                rows.append(measure(Path(tmp), assignment, args.per_assignment, args.small, args.shards, urls, cold))
                print(f"  {assignment.id} ({rows[-1]['sandbox']}): {rows[-1]['core-s']:.0f} core-s", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    shown = [{k: (f"{v:.2f}" if isinstance(v, float) else v) for k, v in row.items()} for row in rows]
    print(text_table(shown))
    warm = [r for r in rows if r["sandbox"] == "warm"]
    if args.cold:
        for row, cold in zip(warm, (r for r in rows if r["sandbox"] == "cold")):
            print(f"{row['assignment']}: a cold sandbox costs {cold['core-s per submission'] / row['core-s per submission']:.1f}x "
                  f"the core-s per submission of a warm one ({cold['core-s per submission']:.2f} against "
                  f"{row['core-s per submission']:.2f})")
    print(estimate(warm, args.students, args.shards))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
