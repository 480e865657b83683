"""Execute every solution notebook with papermill and build the report (``make run``, CI).

    python -m utils.execute [--quick | --full] [--device auto] [--only 03_building_models] [--out build] [--check] [--jobs N]

Executed notebooks go to ``OUT/executed/`` (as .ipynb and .html), measurements to
``OUT/measurements.jsonl``, what was run to ``OUT/run.json`` (commit, device, mode: the
manifest a reference run keeps) and the report to ``OUT/report.html``. A failing notebook
does not stop the others; the exit status is 1 if any failed.

``--check`` also verifies the records: every one came from the requested device (host-side
comparisons excepted) and every tip a notebook declares as measured left a record, the
GPU-only ones included when the device is a GPU. Each notebook declares its measured tips in
its metadata: ``{"course": {"measured": [...], "gpu_only": [...]}}``.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import dataclasses
import datetime
import importlib.util
import json
import multiprocessing
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import torch
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import run_sync

from .device import device_name, pick_device
from .lesson_shape import notebook_shape
from .lesson_shape import rows as lesson_rows
from .paths import BUILD, REPO_ROOT, SOLUTIONS
from .priority import share_nice
from .records import load
from .report import NotebookRun, build_report, slowest_cells
from .tables import text_table


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


# A kernel started ahead imports torch while it waits (the name is removed again: a notebook must
# import what it uses). Ahead only where cores are spare: the import takes one core for 1-2 s.
PRELOAD = "import torch as _preloaded; del _preloaded"
AHEAD_MIN_CORES = 8
PRECOMPILED = ("torchvision",)  # with torch, compiled ahead where torch ships no bytecode (compile_ahead)


class Kernel:
    """A notebook's kernel, started by the runner rather than by papermill, so that it can start
    before its notebook's turn (``preload``: and import torch meanwhile). On a GPU host that saved
    the kernel start and torch's import, about 2 s, in each notebook after the first.

    Where the OS has them (not Windows), it talks to the runner over socket files in a private
    temporary folder: ipykernel warns that its default, TCP on localhost, is unencrypted, and any
    user of a shared machine can connect to a TCP port."""

    def __init__(self, source: Path, env: dict[str, str], preload: bool = False):
        self.folder = tempfile.TemporaryDirectory(prefix="course-kernel-")  # mode 0700
        sockets = {"transport": "ipc", "ip": os.path.join(self.folder.name, "kernel")} if os.name == "posix" else {}
        self.manager = AsyncKernelManager(kernel_name="python3", **sockets)
        preloading = [f"--IPKernelApp.exec_lines={PRELOAD}"] if preload else []
        try:
            run_sync(self.manager.start_kernel)(cwd=str(source.parent), env=env, extra_arguments=preloading)
        except BaseException:
            self.folder.cleanup()
            raise
        share_nice(self.manager.provisioner.process.pid)  # `nice make run`: the kernel's session too

    def close(self) -> None:
        """Kill the kernel with its process group (DataLoader and compile workers too) rather than
        ask it to exit: every output is in hand, and a torch kernel's own exit took 0.7 s, one that
        compiled 1.5-2 s (atexit handlers, inductor's worker pool) on the 2-core VM."""
        try:
            if run_sync(self.manager.is_alive)():
                run_sync(self.manager.shutdown_kernel)(now=True)
        finally:
            self.folder.cleanup()


def kernel_env(source: Path, records: Path | None = None, threads: int | None = None,
               changes: dict[str, str | None] | None = None) -> dict[str, str]:
    """The kernel's environment: the runner's, plus the notebook's name for its records, where its
    records go (default: wherever COURSE_RECORDS points), its intra-op threads (OMP_NUM_THREADS),
    and ``changes`` (``shared_bytecode``'s; None removes a variable). The runner's own stays as is."""
    own = {"COURSE_NOTEBOOK": source.stem}
    if records is not None:
        own["COURSE_RECORDS"] = str(records)
    if threads is not None:
        own["OMP_NUM_THREADS"] = str(threads)
    return _changed({**own, **(changes or {})})


def _changed(changes: dict[str, str | None]) -> dict[str, str]:
    """The runner's environment with ``changes`` made (None removes a variable)."""
    return {name: value for name, value in {**os.environ, **changes}.items() if value is not None}


def shared_bytecode(environ: dict, package: Path, cache: Path) -> dict[str, str | None]:
    """What to change in the kernels' environment so that they stop compiling torch from source.

    Every kernel imports torch, some 2,000 modules. Where Python keeps no bytecode for them (no
    ``.pyc`` beside torch's sources, and ``PYTHONDONTWRITEBYTECODE`` set or site-packages read-only,
    as in some container images), each kernel compiles them all again: 6-10 s of every notebook on
    an H200 host. There the kernels share one bytecode cache, ``cache`` (``PYTHONPYCACHEPREFIX``),
    and may write to it. Elsewhere, or where the user chose a prefix, nothing changes (``{}``).
    ``None`` means: remove that variable."""
    own = importlib.util.cache_from_source(str(package / "__init__.py"))
    if environ.get("PYTHONPYCACHEPREFIX") or Path(own).exists():
        return {}
    return {"PYTHONPYCACHEPREFIX": str(cache), "PYTHONDONTWRITEBYTECODE": None}


def compile_ahead(packages: list[Path], changes: dict[str, str | None]) -> None:
    """Compile every module of ``packages`` into the bytecode cache that ``changes`` names, on every
    core at once: the first kernel would compile the ~2,000 it imports one at a time (about 7 s of
    00's first cells on the H200). Errors are compileall's to report; a module left out is
    compiled by the kernel that imports it."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", "-q", "-j", "0", *map(str, packages)],
                   env=_changed(changes), check=False)


def run_one(source: Path, out_dir: Path, quick: bool, device: str, env: dict[str, str] | None = None,
            label: str = "", kernel: Kernel | None = None) -> NotebookRun:
    """Execute one notebook with papermill into ``out_dir/executed``, in ``kernel`` (default: one
    started now, with ``env``, default ``kernel_env(source)``), which it then closes. On a
    terminal, papermill's tqdm bar shows the cells done and an ETA, headed by ``label`` (say
    "[3/12] 02_tensor_toolbox").

    The executed notebook is written when it ends, with the failing cell's error if one failed.
    papermill's default also rewrites it at the start and end of every cell, which cost 12% of a
    QUICK run of 04 on the 2-core VM (median of 3: 10.95 s with, 9.65 s without); a run killed
    mid-notebook therefore leaves no executed copy of that notebook (not a stale one)."""
    import papermill  # papermill takes a second to import: only when a notebook runs

    executed = out_dir / "executed" / source.name
    executed.parent.mkdir(parents=True, exist_ok=True)
    executed.unlink(missing_ok=True)
    executed.with_suffix(".html").unlink(missing_ok=True)  # render_html writes it afterwards
    start = time.perf_counter()
    try:
        kernel = kernel or Kernel(source, env or kernel_env(source))
        papermill.execute_notebook(str(source), str(executed), parameters={"QUICK": quick, "DEVICE": device},
                                   cwd=str(source.parent), km=kernel.manager, request_save_on_cell_execute=False,
                                   progress_bar={"desc": label or source.stem} if sys.stderr.isatty() else False)
        ok, error = True, ""
    except Exception as exc:  # papermill raises PapermillExecutionError with the cell's traceback
        ok, error = False, str(exc).strip().splitlines()[-1] if str(exc).strip() else repr(exc)
    finally:
        if kernel is not None:
            kernel.close()
    return NotebookRun(source.stem, time.perf_counter() - start, ok, None, error)


class Pages:
    """The executed notebooks' HTML pages, rendered in ``pool`` (or here, in turn). ``early``: each
    as soon as its notebook ends, beside the next notebook's run (on 16 cores that hid the pool's
    start and the rendering, seconds at the end of a run); else all at once, in ``done``."""

    def __init__(self, folder: Path, pool: concurrent.futures.Executor | None, early: bool):
        self.folder, self.pool, self.early, self.pending = folder, pool, early and pool is not None, {}

    def start(self, name: str) -> None:
        if self.early:
            self.pending[name] = self.pool.submit(render_html, self.folder / f"{name}.ipynb")

    def done(self, names: list[str]) -> list[Path | None]:
        """Every page, in the order of ``names``."""
        rest = [name for name in names if name not in self.pending]
        rendered = dict(zip(rest, (self.pool.map if self.pool else map)(
            render_html, [self.folder / f"{name}.ipynb" for name in rest])))
        return [self.pending[name].result() if name in self.pending else rendered[name] for name in names]


def render_html(executed: Path) -> Path | None:
    """The executed notebook rendered to HTML beside it; None where the run left no notebook."""
    from nbconvert import HTMLExporter  # a second to import: only where a page is made

    if not executed.exists():
        return None
    body, _ = HTMLExporter().from_notebook_node(nbformat.read(executed, as_version=4))
    page = executed.with_suffix(".html")
    page.write_text(body, encoding="utf-8")
    return page


@contextlib.contextmanager
def workers():
    """A pool over every core, in fresh processes, for rendering: the pages and the report's
    hundred plots took 25 s on one core of the 2-core VM. ``run_many`` gives it a page as each
    notebook ends where cores are spare (``AHEAD_MIN_CORES``), else all pages once every notebook
    has run, when nothing is measured any more."""
    with _spawned(os.cpu_count(), initializer=_leave_ctrl_c_to_the_runner) as pool:
        try:
            yield pool
        except BaseException:   # Ctrl-C: drop the pages not started; the runner says what happened
            pool.shutdown(cancel_futures=True)
            raise


def _leave_ctrl_c_to_the_runner() -> None:
    """A rendering worker ignores Ctrl-C, which a terminal sends to the runner's whole process group:
    the runner stops the pool, and no worker's traceback buries the runner's one line."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _spawned(processes: int | None, initializer=None) -> concurrent.futures.ProcessPoolExecutor:
    """A pool of fresh processes (spawned, not forked: the runner may have started CUDA and threads)."""
    return concurrent.futures.ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn"),
                                                  initializer=initializer)


def run_many(sources: list[Path], out_dir: Path, quick: bool, device: str, jobs: int = 1,
             on_done=lambda run: None, pool: concurrent.futures.Executor | None = None) -> tuple[list[NotebookRun], Path]:
    """Execute notebooks, each writing its records to ``out_dir/records/<name>.jsonl``, then join
    those into ``out_dir/measurements.jsonl`` in course order, and render the executed notebooks
    to HTML in ``pool`` (say ``workers()``'s; default: here, in turn). ``jobs > 1`` runs that many at once in worker
    processes, each kernel on one thread (several multi-threaded kernels on few cores wait on
    each other's threads, 10-50x slower): fine for checking that notebooks run (CI), but their
    timings then disturb each other, so measurements you will read come from ``jobs=1``."""
    (out_dir / "records").mkdir(parents=True, exist_ok=True)
    threads = 1 if jobs > 1 else None
    torch_dir = Path(torch.__file__).parent
    bytecode = shared_bytecode(dict(os.environ), torch_dir, out_dir / ".pycache")
    records = [out_dir / "records" / f"{source.stem}.jsonl" for source in sources]
    tasks = [(source, out_dir, quick, device, kernel_env(source, written, threads, bytecode),
              f"[{k}/{len(sources)}] {source.stem}") for k, (source, written) in enumerate(zip(sources, records), 1)]
    for written in records:
        written.unlink(missing_ok=True)
    many_cores = (os.cpu_count() or 1) >= AHEAD_MIN_CORES
    if bytecode and many_cores:
        compile_ahead([torch_dir, *_package_dirs(PRECOMPILED)], bytecode)
    pages = Pages(out_dir / "executed", pool, early=many_cores and jobs <= 1)

    def finished(run: NotebookRun) -> None:
        pages.start(run.name)
        on_done(run)

    if jobs <= 1:
        runs = _run_in_turn(tasks, ahead=many_cores, on_done=finished)
    else:
        with _spawned(jobs) as runners:
            futures = [runners.submit(run_one, *task) for task in tasks]
            for future in concurrent.futures.as_completed(futures):
                finished(future.result())
            runs = [future.result() for future in futures]
    runs = [dataclasses.replace(run, html_path=page) for run, page in zip(runs, pages.done([r.name for r in runs]))]
    joined = out_dir / "measurements.jsonl"
    joined.write_text("".join(w.read_text(encoding="utf-8") for w in records if w.exists()), encoding="utf-8")
    return runs, joined


def _package_dirs(names: tuple[str, ...]) -> list[Path]:
    """The folders of the installed packages among ``names`` (none is imported)."""
    specs = [importlib.util.find_spec(name) for name in names]
    return [Path(spec.origin).parent for spec in specs if spec is not None and spec.origin]


def _run_in_turn(tasks: list[tuple], ahead: bool, on_done) -> list[NotebookRun]:
    """``run_one`` for each task in turn; ``ahead``: each next notebook's kernel starts (and imports
    torch) while the one before runs."""
    runs, waiting = [], None
    try:
        for k, task in enumerate(tasks):
            kernel, waiting = waiting, None
            if ahead and k + 1 < len(tasks):
                source, *_, env, _ = tasks[k + 1]
                with contextlib.suppress(Exception):   # if it cannot start, run_one tries again and says why
                    waiting = Kernel(source, env, preload=True)
            runs.append(run_one(*task, kernel=kernel))
            on_done(runs[-1])
    finally:
        if waiting is not None:
            waiting.close()
    return runs


def measured_tips(notebook: Path, device_type: str) -> set[str]:
    """The tips a notebook promises to measure on this kind of device (its ``course`` metadata)."""
    meta = nbformat.read(notebook, as_version=4).metadata.get("course", {})
    tips = set(meta.get("measured", []))
    return tips | set(meta.get("gpu_only", [])) if device_type in ("cuda", "mps") else tips


def check_records(notebooks: list[Path], records_file: Path, device: str) -> list[str]:
    """Problems with a run's records: wrong device, or a promised measurement missing."""
    device_type = pick_device(device).type
    loaded = load(records_file)
    problems = [f"{r.notebook} {r.tip} '{r.variant}' ran on {r.device}, not {device_type}"
                for r in loaded if r.device.split(":")[0] != device_type and not r.host]
    for notebook in notebooks:
        found = {r.tip for r in loaded if r.notebook == notebook.stem}
        missing = measured_tips(notebook, device_type) - found
        if missing:
            problems.append(f"{notebook.stem}: no record of {', '.join(sorted(missing))} on {device_type}")
    return problems


def write_manifest(out_dir: Path, quick: bool, device: str) -> Path:
    """``run.json``: what produced these records (a reference run keeps it)."""
    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True,
                                  check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return ""

    dev = pick_device(device)
    manifest = {"commit": git("rev-parse", "HEAD") or "unknown", "dirty": bool(git("status", "--porcelain")),
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "quick": quick, "device": dev.type, "device_name": device_name(dev),
                "torch": torch.__version__, "python": platform.python_version(), "runner": "utils.execute"}
    path = out_dir / "run.json"
    path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def _print_run(run: NotebookRun) -> None:
    print(f"  {run.name}: {'ok' if run.ok else 'FAILED'} in {run.seconds:.1f} s"
          + (f": {run.error}" if run.error else ""), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m utils.execute", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()  # the notebooks' QUICK parameter, spelled the same way
    mode.add_argument("--quick", dest="quick", action="store_true", default=True,
                      help="QUICK = True: short timings, small CPU sizes (the default)")
    mode.add_argument("--full", dest="quick", action="store_false", help="QUICK = False: full sizes and timings")
    parser.add_argument("--device", default="auto", help="DEVICE parameter: auto, cpu, cuda, mps")
    parser.add_argument("--only", nargs="+", metavar="NOTEBOOK", help="run only these notebooks (by name)")
    parser.add_argument("--out", type=Path, default=BUILD, help="output folder (default: build/)")
    parser.add_argument("--jobs", type=int, default=1, metavar="N",
                        help="notebooks run at once (default 1; more disturbs the timings: for CI only)")
    parser.add_argument("--check", action="store_true",
                        help="fail unless every record came from --device and every promised tip was measured")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")

    started = time.perf_counter()
    out_dir = args.out.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "measurements.jsonl").unlink(missing_ok=True)  # the report shows this run only
    try:
        write_manifest(out_dir, quick=args.quick, device=args.device)
    except (RuntimeError, ValueError) as exc:  # e.g. --device cuda on a machine without a usable GPU
        print(f"error: {exc}", file=sys.stderr)
        return 2
    notebooks = solution_notebooks(args.only)
    print(f"executing {len(notebooks)} notebook(s) ({'QUICK' if args.quick else 'full'}, device={args.device}, "
          f"{args.jobs} at a time) ...", flush=True)
    try:
        runs, records_file, report = _run_and_report(notebooks, out_dir, args, started)
    except KeyboardInterrupt:
        print("interrupted: the running notebook's kernel was stopped; no report was written", file=sys.stderr)
        return 130
    print(f"report: {report} ({time.perf_counter() - started:.1f} s in all)")
    problems = check_records(notebooks, records_file, args.device) if args.check else []
    for problem in problems:
        print(f"check failed: {problem}", file=sys.stderr)
    return 0 if all(r.ok for r in runs) and not problems else 1


def _run_and_report(notebooks: list[Path], out_dir: Path, args, started: float) -> tuple[list[NotebookRun], Path, Path]:
    """Run the notebooks, print how they went, and build the report: the runs, the records, the report."""
    with workers() as pool:
        runs, records_file = run_many(notebooks, out_dir, quick=args.quick, device=args.device, jobs=args.jobs,
                                      on_done=_print_run, pool=pool)
        print(f"{len(runs)} notebook(s) in {sum(r.seconds for r in runs):.1f} s of papermill time, "
              f"{time.perf_counter() - started:.1f} s in all so far")
        shape = lesson_rows([notebook_shape(n, out_dir / "executed" / n.name) for n in notebooks])
        print(text_table(shape))
        slowest = slowest_cells([out_dir / "executed" / n.name for n in notebooks])
        if slowest:
            print(text_table(slowest))
        report = build_report(records_file, out_dir / "report.html", runs, shape, slowest, map_=pool.map)
    return runs, records_file, report


if __name__ == "__main__":
    raise SystemExit(main())
