"""Grading as an ordinary user: bubblewrap then isolates student code in a user namespace of its own.
When the suite runs as root, one grading runs here under an unprivileged uid."""
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import pytest

from grader import cli, sandbox
from grader.course import ASSIGNMENTS_DIR
from utils.paths import REPO_ROOT

AID = "00_measure_first"
STUDENTS = ("current_device",)  # with the reference solution, two sandboxes at once
UNPRIVILEGED = 60999  # outside the sandbox's own uid range


def _private_top(path: str) -> Path | None:
    """The highest folder on the way to ``path`` that others may not enter (mode 0700: /root on many
    machines, a ``mktemp -d`` folder, a home folder), or None when the whole way is open."""
    return next((p for p in reversed(Path(path).parents) if not p.stat().st_mode & 0o001), None)


def _as_unprivileged_user(argv: list[str], home: Path) -> list[str]:
    """argv run as UNPRIVILEGED. A private folder above the interpreter or the checkout (a private
    /root, a clone in ``mktemp -d``) is replaced by an empty one that holds a path to them and
    nothing else of that folder."""
    if os.geteuid() != 0:
        return argv
    opened, made, bound = ["--dev-bind", "/", "/"], set(), []
    for path in sorted({os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix), str(REPO_ROOT)}):
        top = _private_top(path)
        if top is None or any(Path(path).is_relative_to(b) for b in bound):
            continue
        if top not in made:
            opened += ["--perms", "0755", "--tmpfs", str(top)]
            made.add(top)
        for parent in reversed(Path(path).parents):
            if parent.is_relative_to(top) and parent not in made:
                opened += ["--perms", "0755", "--dir", str(parent)]
                made.add(parent)
        opened += ["--ro-bind", path, path]
        bound.append(path)
    return ["bwrap", *opened, "--setenv", "HOME", str(home), "--", "setpriv", f"--reuid={UNPRIVILEGED}",
            f"--regid={UNPRIVILEGED}", "--clear-groups", *argv]


@pytest.fixture
def home():
    """A folder the unprivileged user owns, on a path it can reach (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="grader-nonroot-"))
    yield path
    shutil.rmtree(path)


def test_an_ordinary_user_grades_in_a_user_namespace(home):
    tmp_path, course_dir = home, home / "course"
    assert cli.main(["samples", "--course-dir", str(course_dir), "--assignment", AID]) == 0
    for folder in (course_dir / "submitted").iterdir():
        if folder.name.removeprefix("sample_") not in STUDENTS:
            shutil.rmtree(folder)
    if os.geteuid() == 0:
        subprocess.run(["chown", "-R", f"{UNPRIVILEGED}:{UNPRIVILEGED}", str(tmp_path)], check=True)
    argv = [sys.executable, "-m", "grader", "autograde", "--course-dir", str(course_dir), "--workers", "2"]
    done = subprocess.run(_as_unprivileged_user(argv, tmp_path), capture_output=True, text=True, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    expected = tomllib.loads((ASSIGNMENTS_DIR / AID / "scores.toml").read_text())
    for student in STUDENTS:
        assert f"sample_{student} {AID}: {expected[student]} / 10" in done.stdout, done.stdout
    grader_uid = UNPRIVILEGED if os.geteuid() == 0 else os.geteuid()
    assert (course_dir / "gradebook.db").stat().st_uid == grader_uid  # the grader really ran as that user
    # nbgrader's own autograde (formgrader's button) leaves the autograded files read-only: a regrade
    # replaces them, which root could do anyway and this user only by writing beside them
    graded = [p for p in (course_dir / "autograded").rglob("*") if p.is_file()]
    assert any(p.suffix == ".ipynb" for p in graded)
    for path in graded:
        path.chmod(0o444)
    again = subprocess.run(_as_unprivileged_user([*argv, "--force"], tmp_path), capture_output=True, text=True,
                           cwd=REPO_ROOT)
    assert again.returncode == 0, again.stdout + again.stderr
    assert all(f"sample_{student} {AID}: {expected[student]} / 10" in again.stdout for student in STUDENTS)


def test_forbidden_user_namespaces_get_a_message_that_says_what_to_enable(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    hint = sandbox.userns_hint("bwrap: setting up uid map: Permission denied")
    assert "unprivileged_userns_clone" in hint and "max_user_namespaces" in hint
    assert sandbox.userns_hint("bwrap: execvp python: No such file or directory") == ""
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert sandbox.userns_hint("bwrap: setting up uid map: Permission denied") == ""  # root needs no user namespace
