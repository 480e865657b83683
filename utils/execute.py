"""Execute every solution notebook with papermill and build the report (``make run``, CI).

    python -m utils.execute [--full] [--device auto] [--only 03_building_models] [--out build]

Executed notebooks go to ``OUT/executed/`` (as .ipynb and .html), measurements to
``OUT/measurements.jsonl`` and the report to ``OUT/report.html``. A failing notebook does not
stop the others; the exit status is 1 if any failed.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from .records import REPO_ROOT
from .report import NotebookRun, build_report

SOLUTIONS = REPO_ROOT / "solutions"


def solution_notebooks(only: list[str] | None = None) -> list[Path]:
    notebooks = sorted(SOLUTIONS.glob("*/*.ipynb"))
    notebooks = [p for p in notebooks if ".ipynb_checkpoints" not in p.parts]
    if only:
        unknown = set(only) - {p.stem for p in notebooks}
        if unknown:
            raise SystemExit(f"error: no solution notebook named {', '.join(sorted(unknown))}; "
                             f"known: {', '.join(p.stem for p in notebooks)}")
        notebooks = [p for p in notebooks if p.stem in only]
    return notebooks


def run_one(source: Path, out_dir: Path, quick: bool, device: str) -> NotebookRun:
    import nbformat
    import papermill
    from nbconvert import HTMLExporter

    executed = out_dir / "executed" / source.name
    executed.parent.mkdir(parents=True, exist_ok=True)
    os.environ["COURSE_NOTEBOOK"] = source.stem  # the kernel inherits it; records name their notebook
    start = time.perf_counter()
    try:
        papermill.execute_notebook(str(source), str(executed), parameters={"QUICK": quick, "DEVICE": device},
                                   cwd=str(source.parent), kernel_name="python3", progress_bar=sys.stderr.isatty())
        ok, error = True, ""
    except Exception as exc:  # papermill raises PapermillExecutionError with the cell's traceback
        ok, error = False, str(exc).strip().splitlines()[-1] if str(exc).strip() else repr(exc)
    seconds = time.perf_counter() - start
    html_path = None
    if executed.exists():
        body, _ = HTMLExporter().from_notebook_node(nbformat.read(executed, as_version=4))
        html_path = executed.with_suffix(".html")
        html_path.write_text(body, encoding="utf-8")
    return NotebookRun(source.stem, seconds, ok, html_path, error)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m utils.execute", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="full sizes and timings (default: QUICK mode)")
    parser.add_argument("--device", default="auto", help="DEVICE parameter: auto, cpu, cuda, mps")
    parser.add_argument("--only", nargs="+", metavar="NOTEBOOK", help="run only these notebooks (by name)")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "build", help="output folder (default: build/)")
    args = parser.parse_args(argv)

    out_dir = args.out.resolve()
    records_file = out_dir / "measurements.jsonl"
    records_file.parent.mkdir(parents=True, exist_ok=True)
    records_file.unlink(missing_ok=True)  # the report shows this run only
    os.environ["COURSE_RECORDS"] = str(records_file)
    runs = []
    for source in solution_notebooks(args.only):
        print(f"executing {source.relative_to(REPO_ROOT)} ({'full' if args.full else 'QUICK'}, device={args.device}) ...",
              flush=True)
        run = run_one(source, out_dir, quick=not args.full, device=args.device)
        print(f"  {'ok' if run.ok else 'FAILED'} in {run.seconds:.1f} s" + (f": {run.error}" if run.error else ""),
              flush=True)
        runs.append(run)
    report = build_report(records_file, out_dir / "report.html", runs)
    print(f"report: {report}")
    return 0 if all(r.ok for r in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
