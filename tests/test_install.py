"""Packaging: a wheel built from pyproject.toml holds all the code and the data the grader reads
(checks, probes, sample submissions, the claims ledger), and neither it nor an editable install
prints a warning."""
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("utils", "grader")


@pytest.fixture
def source(tmp_path):
    """A copy of what a build reads: an in-tree build would write into the checkout's build/."""
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source)
    skip = shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints")
    for package in PACKAGES:
        shutil.copytree(REPO / package, source / package, ignore=skip)
    return source


def test_the_wheel_holds_code_and_grader_data_and_builds_without_warnings(source, tmp_path):
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                             "--disable-pip-version-check", "--wheel-dir", str(tmp_path / "dist"), str(source)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    output = result.stdout + result.stderr
    assert [line for line in output.splitlines() if "warn" in line.lower()] == [], output

    (wheel,) = (tmp_path / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = next(archive.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
    expected = {str(p.relative_to(source)) for package in PACKAGES for p in (source / package).rglob("*")
                if p.is_file()}
    assert {"grader/checking.py", "grader/probe_helpers.py", "grader/assignments/03_building_models/checks.py",
            "grader/assignments/03_building_models/probes.py", "utils/claims.toml",
            "utils/why/01_tensors_devices.toml"} <= expected
    assert any(name.startswith("grader/assignments/") and name.endswith("/scores.toml") for name in expected)
    assert expected <= names, sorted(expected - names)
    assert [name for name in names - expected if ".dist-info/" not in name] == []  # nothing else
    assert "License-Expression: MIT" in metadata


def test_an_editable_install_builds_without_warnings_and_points_at_the_checkout(source, tmp_path):
    # The PEP 660 hook that `pip install -e .` calls, with every Python warning shown: pip prints the
    # backend's warnings, such as setuptools' "Editable installation" notice for its import hook.
    hook = "import sys; from setuptools import build_meta; build_meta.build_editable(sys.argv[1])"
    result = subprocess.run([sys.executable, "-W", "always", "-c", hook, str(tmp_path / "dist")], cwd=source,
                            capture_output=True, text=True, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert re.findall(r"^.*:\d+: \w+: .*$", output, re.MULTILINE) == [], output  # file:line: Category: text

    (wheel,) = (tmp_path / "dist").glob("*.editable-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        (pth,) = [archive.read(n).decode() for n in archive.namelist() if n.endswith(".pth")]
    assert [Path(line) for line in pth.split()] == [source]  # the checkout itself goes on sys.path
