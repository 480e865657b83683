"""The runner's manifest and its record checks (what the GPU CI job relies on)."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
import torch

from utils import execute, records
from utils.paths import REPO_ROOT


def record(tip, device="cpu", notebook="01_x", host=False):
    return records.Record(comparison=tip, tip=tip, title="t", variant="v", role="baseline", device=device,
                          device_name="d", notebook=notebook, host=host, median_s=1.0)


def notebook(tmp_path, measured, gpu_only):
    nb = nbformat.v4.new_notebook()
    nb.metadata["course"] = {"measured": measured, "gpu_only": gpu_only}
    path = tmp_path / "01_x.ipynb"
    nbformat.write(nb, path)
    return path


def test_check_finds_missing_tips_and_records_from_the_wrong_device(tmp_path):
    nb = notebook(tmp_path, ["T013", "T014"], ["T016"])
    path = tmp_path / "m.jsonl"
    records.append([record("T013"), record("T015", device="cpu", host=True)], path)
    problems = execute.check_records([nb], path, "cpu")
    assert problems == ["01_x: no record of T014 on cpu"]  # T016 is GPU-only; a host record is fine
    records.append([record("T014")], path)
    assert execute.check_records([nb], path, "cpu") == []


def test_gpu_only_tips_are_required_on_a_gpu(tmp_path):
    nb = notebook(tmp_path, ["T013"], ["T016"])
    assert execute.measured_tips(nb, "cuda") == {"T013", "T016"}
    assert execute.measured_tips(nb, "cpu") == {"T013"}


def test_every_solution_declares_its_measured_tips():
    for source in execute.solution_notebooks():
        meta = nbformat.read(source, as_version=4).metadata.get("course")
        assert meta and meta["measured"], f"{source.name}: metadata course.measured is missing"
        assert set(meta) == {"measured", "gpu_only"}


def test_manifest_names_commit_device_and_mode(tmp_path):
    manifest = json.loads(execute.write_manifest(tmp_path, quick=True, device="cpu").read_text())
    assert manifest["quick"] is True and manifest["device"] == "cpu" and manifest["torch"] == torch.__version__
    assert len(manifest["commit"]) == 40 and isinstance(manifest["dirty"], bool)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error raised where CUDA is missing")
def test_asking_for_a_missing_gpu_fails_at_once_with_a_clear_error(tmp_path):
    run = subprocess.run([sys.executable, "-m", "utils.execute", "--device", "cuda", "--out", str(tmp_path)],
                         cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "CUDA is not available" in run.stderr
    assert not (tmp_path / "executed").exists()


def test_the_kernel_talks_over_private_socket_files_not_tcp(tmp_path, capfd):
    source = tmp_path / "tiny.ipynb"
    _tiny(source, "from ipykernel.kernelapp import IPKernelApp\n"
                  "app = IPKernelApp.instance()\nprint(app.transport, app.ip)")
    run = execute.run_one(source, tmp_path / "out", quick=True, device="cpu")
    assert run.ok, run.error
    (output,) = nbformat.read(tmp_path / "out" / "executed" / "tiny.ipynb", 4).cells[-1].outputs
    transport, ip = output.text.split()
    folder = Path(ip).parent
    assert transport == "ipc" and folder.name.startswith("course-kernel-")
    assert not folder.exists()  # removed with the kernel
    assert "without encryption" not in capfd.readouterr().err


@pytest.mark.skipif(not os.path.exists("/proc/self/autogroup"), reason="this kernel schedules no session groups")
def test_a_niced_runner_keeps_its_kernels_niced(tmp_path):
    """jupyter_client starts each kernel in a session of its own, which Linux schedules as a group
    at nice 0: `nice make run` must not run its notebooks at full priority beside other work."""
    source = tmp_path / "tiny.ipynb"
    _tiny(source, "import os\nprint(open('/proc/self/autogroup').read().split()[-1], os.nice(0))")
    script = ("import sys\nfrom pathlib import Path\nfrom utils import execute\n"
              "run = execute.run_one(Path(sys.argv[1]), Path(sys.argv[2]), quick=True, device='cpu')\n"
              "assert run.ok, run.error")
    done = subprocess.run(["nice", "-n", "6", sys.executable, "-c", script, str(source), str(tmp_path / "out")],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    (output,) = nbformat.read(tmp_path / "out" / "executed" / "tiny.ipynb", 4).cells[-1].outputs
    assert output.text.split() == ["6", "6"]


def _tiny(path, code):
    nbformat.write(nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("QUICK, DEVICE = True, 'auto'", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("print('first cell ran')"), nbformat.v4.new_code_cell(code)],
        metadata={"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}}), path)


def test_a_failed_notebook_keeps_its_error_and_a_dead_kernel_leaves_no_stale_copy(tmp_path):
    """The executed notebook is written once, at the end (not after every cell): a failing cell's
    error is in it; a kernel that dies leaves no executed copy, not the one of an earlier run."""
    source, out = tmp_path / "tiny.ipynb", tmp_path / "out"
    executed = out / "executed" / "tiny.ipynb"
    _tiny(source, "raise ValueError('broken on purpose')")
    run = execute.run_one(source, out, quick=True, device="cpu")
    assert not run.ok and "broken on purpose" in run.error
    outputs = [o for c in nbformat.read(executed, 4).cells if c.cell_type == "code" for o in c.outputs]
    assert any("first cell ran" in o.get("text", "") for o in outputs)
    assert any(o.get("ename") == "ValueError" for o in outputs)
    assert "broken on purpose" in execute.render_html(executed).read_text()
    _tiny(source, "import os\nos._exit(3)")
    run = execute.run_one(source, out, quick=True, device="cpu")
    assert not run.ok and run.error
    assert not executed.exists() and not executed.with_suffix(".html").exists(), "no stale copy of the last run"
    assert execute.render_html(executed) is None


def test_on_many_cores_the_next_kernel_starts_and_imports_torch_while_a_notebook_runs(tmp_path, monkeypatch):
    """Each kernel runs its own notebook, with its own name and records; the ones started ahead
    hold torch in sys.modules but not the name (a notebook must import what it uses); every kernel
    is gone afterwards."""
    monkeypatch.setattr(execute, "AHEAD_MIN_CORES", 1)
    probe = ("import os, sys\nprint(os.environ['COURSE_NOTEBOOK'], os.environ['COURSE_RECORDS'].endswith("
             "os.environ['COURSE_NOTEBOOK'] + '.jsonl'), 'torch' in sys.modules, 'torch' in globals(), os.getpid())")
    sources = []
    for name in ("a_first", "b_second", "c_third"):
        (tmp_path / name).mkdir()
        _tiny(tmp_path / name / f"{name}.ipynb", probe)
        sources.append(tmp_path / name / f"{name}.ipynb")
    before = dict(os.environ)
    runs, _ = execute.run_many(sources, tmp_path / "out", quick=True, device="cpu")
    assert [r.ok for r in runs] == [True] * 3, [r.error for r in runs]
    assert dict(os.environ) == before, "the runner's own environment is left as it was"
    lines = [nbformat.read(tmp_path / "out" / "executed" / s.name, 4).cells[-1].outputs[0].text.split()
             for s in sources]
    assert [line[:4] for line in lines] == [["a_first", "True", "False", "False"],
                                            ["b_second", "True", "True", "False"],
                                            ["c_third", "True", "True", "False"]]
    for pid in (int(line[4]) for line in lines):
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


@pytest.mark.parametrize("many_cores", [True, False])
def test_pages_render_beside_the_next_notebook_only_where_cores_are_spare(tmp_path, monkeypatch, many_cores):
    """On many cores the first notebook's page is rendered while the second runs (the second waits
    up to 60 s for it); on few cores no page is made until every notebook has run. Each run gets
    its own page either way."""
    monkeypatch.setattr(execute, "AHEAD_MIN_CORES", 1 if many_cores else 10**6)
    page = tmp_path / "out" / "executed" / "a_first.html"
    wait = 60 if many_cores else 1
    _tiny(tmp_path / "a_first.ipynb", "print('first')")
    _tiny(tmp_path / "b_second.ipynb", f"import pathlib, time\npage = pathlib.Path({str(page)!r})\n"
          f"deadline = time.monotonic() + {wait}\nwhile not page.exists() and time.monotonic() < deadline:\n"
          "    time.sleep(0.1)\nprint('page there:', page.exists())")
    with execute.workers() as pool:
        runs, _ = execute.run_many([tmp_path / "a_first.ipynb", tmp_path / "b_second.ipynb"], tmp_path / "out",
                                   quick=True, device="cpu", pool=pool)
    assert [r.html_path for r in runs] == [page, page.with_name("b_second.html")]
    assert all(r.html_path.exists() for r in runs)
    seen = nbformat.read(tmp_path / "out" / "executed" / "b_second.ipynb", 4).cells[-1].outputs[0].text
    assert seen == f"page there: {many_cores}\n"


def test_a_kernel_that_cannot_start_fails_its_notebook_with_the_reason(tmp_path, monkeypatch):
    async def refuse(self, **kwargs):
        raise RuntimeError("no kernel for you")

    monkeypatch.setattr(execute, "AHEAD_MIN_CORES", 1)
    monkeypatch.setattr(execute.AsyncKernelManager, "start_kernel", refuse)
    sources = []
    for name in ("a_first", "b_second"):
        _tiny(tmp_path / f"{name}.ipynb", "print('never')")
        sources.append(tmp_path / f"{name}.ipynb")
    folders = set(Path(tempfile.gettempdir()).glob("course-kernel-*"))
    runs, _ = execute.run_many(sources, tmp_path / "out", quick=True, device="cpu")
    assert [(r.ok, r.error) for r in runs] == [(False, "no kernel for you")] * 2
    assert set(Path(tempfile.gettempdir()).glob("course-kernel-*")) == folders, "no socket folder left behind"


@pytest.mark.parametrize("many_cores", [False, True])
def test_ctrl_c_stops_the_run_and_kills_the_running_kernel(tmp_path, many_cores):
    """Ctrl-C in a terminal reaches the runner's whole process group: on many cores that includes
    the pool that renders pages meanwhile. The run stops at once, with one line and no traceback."""
    marker = tmp_path / "kernel.pid"
    _tiny(tmp_path / "a_quick.ipynb", "print('done')")
    _tiny(tmp_path / "b_slow.ipynb", f"import os, time\nopen({str(marker)!r}, 'w').write(str(os.getpid()))\n"
                                     "time.sleep(300)")
    # Ctrl-C at its default, as in a terminal: a suite started in the background (nohup, `cmd &`) passes
    # SIGINT down ignored, and the runner then never sees the interrupt this test sends.
    notebooks = [tmp_path / "a_quick.ipynb", tmp_path / "b_slow.ipynb"]
    driver = ("import signal, sys\nfrom pathlib import Path\nfrom utils import execute\n"
              "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
              f"execute.AHEAD_MIN_CORES = {1 if many_cores else 10**6}\n"
              f"execute.solution_notebooks = lambda only=None: [Path(p) for p in {list(map(str, notebooks))!r}]\n"
              f"sys.exit(execute.main(['--out', {str(tmp_path / 'out')!r}]))")
    run = subprocess.Popen([sys.executable, "-c", driver], cwd=REPO_ROOT, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, start_new_session=True)
    page = tmp_path / "out" / "executed" / "a_quick.html"
    deadline = time.monotonic() + 120
    while (not (marker.exists() and marker.read_text()) or (many_cores and not page.exists())) \
            and time.monotonic() < deadline and run.poll() is None:
        time.sleep(0.2)
    assert marker.exists(), run.communicate()
    os.killpg(run.pid, signal.SIGINT)                 # as Ctrl-C does: the whole foreground group
    _, err = run.communicate(timeout=60)
    assert run.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    with pytest.raises(ProcessLookupError):
        os.kill(int(marker.read_text()), 0)
    assert _living(group=run.pid) == [], "nothing of the run is left: no pool worker either"
    assert not (tmp_path / "out" / "report.html").exists()


def _living(group: int) -> list[str]:
    """The processes of a process group that still run (a zombie has exited: where PID 1 is not an
    init, as in some containers, nobody reaps an orphan's zombie)."""
    time.sleep(1)  # a worker told to stop may take a moment
    table = subprocess.run(["ps", "-o", "stat=,pid=,args=", "-g", str(group)], capture_output=True, text=True).stdout
    return [line for line in table.splitlines() if line.strip() and not line.lstrip().startswith("Z")]


def _fake_package(root, **modules):
    """``root/src/fakepkg`` with an ``__init__.py`` and ``modules`` ({name: source})."""
    package = root / "src" / "fakepkg"
    package.mkdir(parents=True)
    for name, source in {"__init__": "VALUE = 1\n", **modules}.items():
        (package / f"{name}.py").write_text(source)
    return package


def _import_in_a_new_python(package_root, env):
    subprocess.run([sys.executable, "-c", "import fakepkg"], cwd=package_root, env=env, check=True)


def test_kernels_share_a_bytecode_cache_where_python_would_keep_none(tmp_path, monkeypatch):
    """A container image with PYTHONDONTWRITEBYTECODE and no .pyc: without the shared cache every
    kernel compiles torch again; with it the first kernel writes bytecode that the next one reads."""
    package = _fake_package(tmp_path)
    cache = tmp_path / "cache"
    image_env = {"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}
    changes = execute.shared_bytecode(image_env, package, cache)
    assert changes == {"PYTHONPYCACHEPREFIX": str(cache), "PYTHONDONTWRITEBYTECODE": None}

    _import_in_a_new_python(package.parent, image_env)
    assert not list(tmp_path.rglob("*.pyc")), "as the image is, no bytecode is kept"
    monkeypatch.setattr(os, "environ", dict(image_env))      # the runner's environment, as the image sets it
    _import_in_a_new_python(package.parent, execute.kernel_env(package / "__init__.py", changes=changes))
    mirrored = cache / package.relative_to(package.anchor) / f"__init__.{sys.implementation.cache_tag}.pyc"
    assert mirrored.exists(), sorted(str(p) for p in cache.rglob("*.pyc"))
    assert not (package / "__pycache__").exists(), "the package's own folder is left as it was"


def test_compile_ahead_fills_the_shared_cache_without_importing_anything(tmp_path, monkeypatch):
    package = _fake_package(tmp_path, broken_on_import="raise RuntimeError('imported')\n")
    cache = tmp_path / "cache"
    monkeypatch.setattr(os, "environ", {"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"})
    execute.compile_ahead([package], execute.shared_bytecode(os.environ, package, cache))
    mirrored = cache / package.relative_to(package.anchor)
    tag = sys.implementation.cache_tag
    assert {p.name for p in mirrored.glob("*.pyc")} == {f"__init__.{tag}.pyc", f"broken_on_import.{tag}.pyc"}
    assert not (package / "__pycache__").exists()


def test_bytecode_settings_stay_as_they_are_where_python_keeps_bytecode(tmp_path):
    package = _fake_package(tmp_path)
    assert execute.shared_bytecode({"PYTHONPYCACHEPREFIX": "/mine"}, package, tmp_path / "c") == {}, \
        "a prefix the user chose is kept"
    beside = {k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"}  # compile next to the sources
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True, env=beside)
    assert execute.shared_bytecode({"PYTHONDONTWRITEBYTECODE": "1"}, package, tmp_path / "c") == {}, \
        "bytecode beside the sources is read whatever PYTHONDONTWRITEBYTECODE says"
