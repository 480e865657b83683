"""A PostgreSQL gradebook shared by sharded graders, against a real server.

The module starts its own PostgreSQL (grader.pgserver: Debian's `postgresql` package, installed by
`make env`), stopped at the end.
"""
import csv
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

from grader import cli, course, database, gradebook, pgserver
from grader.coursedir import CourseDir
from grader.errors import CourseError
from grader.autograde import discover, shard_of
from grader.grading import Result
from grader.course import ASSIGNMENTS_DIR
from grader.sample_submissions import write_samples
from utils.distributed import free_port
from utils.paths import REPO_ROOT

pytestmark = pytest.mark.busy  # a PostgreSQL server and two graders at once

AID = "01_tensors_devices"  # the fewest bundled samples, quick to grade


@pytest.fixture(scope="module")
def postgres():
    """The server; ``.database(name)`` creates a database and returns its URL (password included)."""
    if not pgserver.INITDB:
        pytest.fail("PostgreSQL is not installed: run `make env` (it installs Debian's postgresql package)")
    with pgserver.local_server() as server:
        yield server


def _scores(url: str) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(database.url(CourseDir(Path(), url))) as gb:
        return {s.student.id: s.score for s in gb.find_assignment(AID).submissions}


@pytest.fixture(scope="module")
def sharded(postgres, tmp_path_factory):
    """The bundled samples of AID graded by two shards at once (two processes, each with its own
    course directory as on two machines) into one new PostgreSQL database."""
    dirs = [tmp_path_factory.mktemp("shard0"), tmp_path_factory.mktemp("shard1")]
    write_samples(dirs[0], course.find(AID), course.NOTEBOOKS / AID)  # `grader samples`, minus its generate step
    # student -> total score: scores.toml holds what each sample scores in one unsharded run
    totals = tomllib.loads((ASSIGNMENTS_DIR / AID / "scores.toml").read_text())
    expected = {p.name: float(totals[p.name.removeprefix("sample_")]) for p in (dirs[0] / "submitted").iterdir()}
    shutil.rmtree(dirs[1])
    shutil.copytree(dirs[0], dirs[1])
    assert {shard_of(student, 2) for student in expected} == {0, 1}  # both shards have work
    url = postgres.database("sharded")
    runs = [subprocess.Popen([sys.executable, "-m", "grader", "autograde", "--course-dir", str(folder),
                              "--shard", f"{k}/2", "--workers", "1", *(["--db-url", url] if k == 0 else [])],
                             env={**os.environ, **({"GRADER_DB_URL": url} if k == 1 else {})},
                             cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for k, folder in enumerate(dirs)]
    outputs = [run.communicate(timeout=600)[0] for run in runs]
    return SimpleNamespace(dirs=dirs, url=url, expected=expected, outputs=outputs,
                           returncodes=[run.returncode for run in runs])


def test_two_shards_grade_every_student_exactly_once_with_the_unsharded_scores(sharded, postgres):
    assert sharded.returncodes == [0, 0], "\n".join(sharded.outputs)
    graded = [set(re.findall(rf"^\[\d+/\d+[^\]]*\] (\S+) {AID}: ", out, re.MULTILINE)) for out in sharded.outputs]
    assert graded[0] | graded[1] == set(sharded.expected) and not graded[0] & graded[1]
    assert all(shard_of(student, 2) == k for k in (0, 1) for student in graded[k])
    assert _scores(sharded.url) == sharded.expected
    for output in sharded.outputs:
        assert postgres.password not in output
        assert f"gradebook: postgresql://grader:***@127.0.0.1:{postgres.port}/sharded" in output


def test_export_and_feedback_read_the_shared_gradebook(sharded, tmp_path):
    out = tmp_path / "grades.csv"
    assert cli.main(["export", "--course-dir", str(tmp_path / "anywhere"), "--to", str(out),
                     "--db-url", sharded.url]) == 0
    rows = list(csv.DictReader(out.open()))
    assert {r["student_id"]: float(r["score"]) for r in rows if r["assignment"] == AID} == sharded.expected
    # feedback after the shards: their autograded notebooks gathered into one folder, scores from the server
    student = next(s for s in sharded.expected if shard_of(s, 2) == 1)
    gathered = tmp_path / "gathered"
    shutil.copytree(sharded.dirs[1] / "autograded" / student, gathered / "autograded" / student)
    assert cli.main(["feedback", "--course-dir", str(gathered), "--workers", "1", "--db-url", sharded.url]) == 0
    page = (gathered / "feedback" / student / AID / f"{AID}.html").read_text()
    assert f"Score: {sharded.expected[student]:.1f} / 10.0" in page


def test_the_course_config_takes_the_shared_gradebook_from_the_environment(sharded, monkeypatch):
    """Plain `nbgrader formgrader` in a shard's course directory, with GRADER_DB_URL set."""
    from traitlets.config.loader import PyFileConfigLoader

    monkeypatch.setenv("GRADER_DB_URL", sharded.url)
    path = sharded.dirs[0] / "nbgrader_config.py"
    config = PyFileConfigLoader(path.name, str(path.parent)).load_config()
    assert config.CourseDirectory.db_url == sharded.url
    assert config.CourseDirectory.root == str(sharded.dirs[0])
    assert sharded.url not in path.read_text()


def _prepare_at_once(barrier, root: Path, url: str) -> None:
    barrier.wait()
    course.prepare(CourseDir(root, url), course.find(AID))


@pytest.fixture(scope="module")
def set_up_at_once(postgres, tmp_path_factory):
    """Three graders prepare AID in one new PostgreSQL gradebook, released at the same instant."""
    import multiprocessing

    url, folder = postgres.database("setup"), tmp_path_factory.mktemp("setup")
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(3)
    graders = [context.Process(target=_prepare_at_once, args=(barrier, folder / f"grader{k}", url)) for k in range(3)]
    for grader in graders:
        grader.start()
    for grader in graders:
        grader.join(timeout=300)
    return SimpleNamespace(url=url, root=folder / "grader0", exitcodes=[g.exitcode for g in graders])


def test_graders_setting_up_one_new_gradebook_at_the_same_moment_take_turns(set_up_at_once):
    """nbgrader creates the tables, the course and the assignment by looking first and inserting
    after: graders starting together would insert the same rows, so prepare() takes turns."""
    assert set_up_at_once.exitcodes == [0, 0, 0]
    assert _scores(set_up_at_once.url) == {}  # the assignment is there, once


def test_a_lost_race_to_create_the_student_or_the_submission_loses_no_score(set_up_at_once, monkeypatch):
    """Another grader inserts the student, then the submission, right after this one looked for it:
    nbgrader refuses each second insert and record() tries again."""
    from nbgrader.api import Gradebook, MissingEntry

    url, root = set_up_at_once.url, set_up_at_once.root
    release = nbformat.read(root / "release" / AID / f"{AID}.ipynb", as_version=4)
    tests = [c.metadata.nbgrader["grade_id"] for c in release.cells
             if c.metadata.get("nbgrader", {}).get("grade") and not c.metadata.nbgrader.get("solution")]
    lost = []

    def too_late(name, insert):
        real = getattr(Gradebook, name)

        def lookup(self, *args):
            if name in lost:
                return real(self, *args)
            lost.append(name)
            with Gradebook(database.url(CourseDir(Path(), url))) as other:  # the other grader inserts first
                insert(other)
            raise MissingEntry(f"{name}: looked just before the other grader inserted")
        monkeypatch.setattr(Gradebook, name, lookup)

    too_late("find_student", lambda gb: gb.add_student("racer"))
    too_late("find_submission", lambda gb: gb.add_submission(AID, "racer"))
    result = Result("racer", AID, verdicts={t: (1.0, "") for t in tests})
    assert gradebook.record(CourseDir(root, url), course.find(AID), result, None, set())[:3] == (10.0, 10.0, 0.0)
    assert lost == ["find_student", "find_submission"]
    assert _scores(url) == {"racer": 10.0}


def test_bad_urls_and_unreachable_servers_are_one_line_errors_without_the_password(postgres, tmp_path, capsys):
    secret = postgres.password
    wrong_password = f"postgresql://grader:not-{secret}@127.0.0.1:{postgres.port}/sharded"
    cases = {
        wrong_password: "password authentication failed",
        f"postgresql://grader:{secret}@127.0.0.1:{free_port()}/sharded": "Connection refused",
        f"postgresql://grader:{secret}@127.0.0.1:{postgres.port}/no_such_db": 'database "no_such_db" does not exist',
        f"postgres://grader:{secret}@127.0.0.1/x": "unsupported database 'postgres'",
        f"{secret}": "is not a database URL",
    }
    for url, reason in cases.items():
        for command in (["export", "--to", str(tmp_path / "g.csv")], ["feedback"], ["autograde"]):
            assert cli.main([command[0], "--course-dir", str(tmp_path), *command[1:], "--db-url", url]) == 2
            err = capsys.readouterr().err
            assert err.startswith("error: ") and err.count("\n") == 1 and reason in err, err
            assert secret not in err  # nor the wrong password, which holds it
    assert cli.main(["export", "--course-dir", str(tmp_path), "--to", str(tmp_path / "g.csv"),
                     "--db-url", postgres.database("empty")]) == 2
    assert "no gradebook at postgresql://grader:***@" in capsys.readouterr().err


def test_shards_partition_the_class_and_adding_a_student_moves_no_one(tmp_path):
    for student in [f"s{i:03d}" for i in range(40)]:
        (tmp_path / "submitted" / student / AID).mkdir(parents=True)

    def split(shards):
        return [{s.student for s in discover(tmp_path, shard=(k, shards))[0]} for k in range(shards)]

    before = split(3)
    assert set().union(*before) == {f"s{i:03d}" for i in range(40)} and sum(map(len, before)) == 40
    assert all(before)
    (tmp_path / "submitted" / "late_joiner" / AID).mkdir(parents=True)
    after = split(3)
    assert [b - {"late_joiner"} for b in after] == before
    assert split(1) == [set().union(*after)]


@pytest.mark.parametrize("value", ["2/2", "5/2", "0/0", "-1/2", "1", "a/2", "1/2/3", "$(JOB_COMPLETION_INDEX)/4"])
def test_bad_shards_are_refused(value, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["autograde", "--course-dir", str(tmp_path), f"--shard={value}"])
    assert exit_.value.code == 2
    assert "is not K/N with K from 0 to N-1" in capsys.readouterr().err


def test_autograde_refuses_a_shard_out_of_range(tmp_path):
    (tmp_path / "submitted").mkdir()
    with pytest.raises(CourseError, match="expected K/N"):
        discover(tmp_path, shard=(2, 2))
