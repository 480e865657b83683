"""Packaging: a wheel built from pyproject.toml holds all the code and the data the grader reads
(checks, probes, sample submissions, the claims ledger), and building it prints no warning."""
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("utils", "grader")


def test_the_wheel_holds_code_and_grader_data_and_builds_without_warnings(tmp_path):
    source = tmp_path / "src"  # a copy: an in-tree build would write into the checkout's build/
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source)
    skip = shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints")
    for package in PACKAGES:
        shutil.copytree(REPO / package, source / package, ignore=skip)

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
    assert {"grader/checks/__init__.py", "grader/probes/common.py", "utils/claims.toml"} <= expected
    assert any(name.startswith("grader/samples/") and name.endswith("scores.toml") for name in expected)
    assert expected <= names, sorted(expected - names)
    assert [name for name in names - expected if ".dist-info/" not in name] == []  # nothing else
    assert "License-Expression: MIT" in metadata
