"""How long the make commands take here: each target run once, in turn, in this checkout.

    python benchmarks/make_times.py run book [test] [--record]

Prints each target's wall time and its exit status, with the load average before and after; with
``--record`` also into docs/measurements.md (benchmarks/record.py), one section per target, so timing
one target keeps the others' figures. Run it on a quiet machine: the
figures are wall times, and whatever else runs shares the cores. ``make test`` includes setting up
the environment only on a fresh clone (.ci/run times that case).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.record import recording  # noqa: E402
from utils.tables import text_table  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ("run", "book", "test", "notebooks")


def timed(target: str) -> dict:
    start = time.perf_counter()
    done = subprocess.run(["make", target], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - start
    if done.returncode:
        print(f"make {target} failed (exit {done.returncode}): {done.stderr.strip()[-500:]}", flush=True)
    return {"target": f"make {target}", "wall": f"{seconds // 60:.0f} min {seconds % 60:.0f} s",
            "exit": done.returncode, "load after": f"{os.getloadavg()[0]:.1f}"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("targets", nargs="+", choices=TARGETS)
    parser.add_argument("--record", action="store_true", help="also write the figures into docs/measurements.md")
    args = parser.parse_args()
    exits = []
    for target in args.targets:
        with recording(f"make {target}", args.record):
            print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
            row = timed(target)
            print(text_table([row]))
        exits.append(row["exit"])
    return max(exits)


if __name__ == "__main__":
    raise SystemExit(main())
