"""The sharded-grading examples in deploy/: a Kubernetes Indexed Job and a GitHub Actions matrix.

Neither runs here (no cluster, no GitHub): the Job is parsed and its arguments go through the
grader's own CLI parser for every completion index; the workflow passes actionlint.
"""
import shlex
from pathlib import Path

import yaml
from test_workflows import actionlint

from grader.cli import build_parser

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"


def test_the_kubernetes_job_runs_one_shard_per_completion_index():
    job = next(d for d in yaml.safe_load_all((DEPLOY / "k8s-indexed-job.yaml").read_text()) if d["kind"] == "Job")
    spec, pod = job["spec"], job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert spec["completionMode"] == "Indexed" and pod["restartPolicy"] == "Never"
    assert container["command"] == ["python", "-m", "grader", "autograde"]
    args = container["args"]
    shards = int(args[args.index("--shard") + 1].removeprefix("$(JOB_COMPLETION_INDEX)/"))
    assert spec["completions"] == spec["parallelism"] == shards
    for index in range(spec["completions"]):  # Kubernetes substitutes the index the Job gives each pod
        parsed = build_parser().parse_args(["autograde", *(a.replace("$(JOB_COMPLETION_INDEX)", str(index))
                                                           for a in args)])
        assert parsed.shard == (index, shards)
    (url,) = [e for e in container["env"] if e["name"] == "GRADER_DB_URL"]
    assert "value" not in url and url["valueFrom"]["secretKeyRef"]  # the password comes from a Secret
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    course = parsed.course_dir
    assert mounts[str(course / "submitted")]["readOnly"] and str(course / "autograded") in mounts


def test_the_github_actions_matrix_passes_actionlint_and_covers_every_shard():
    path = DEPLOY / "github-actions-shards.yml"
    result = actionlint(path)
    assert result.returncode == 0, result.stdout + result.stderr
    workflow = yaml.safe_load(path.read_text())
    assert workflow["env"]["GRADER_DB_URL"] == "${{ secrets.GRADEBOOK_URL }}"
    grade = workflow["jobs"]["grade"]
    shards = grade["env"]["SHARDS"]
    assert grade["strategy"]["matrix"]["shard"] == list(range(shards))
    (command,) = [s["run"] for s in grade["steps"] if "grader autograde" in s.get("run", "")]
    for shard in grade["strategy"]["matrix"]["shard"]:
        line = command.replace("${{ matrix.shard }}", str(shard)).replace("$SHARDS", str(shards))
        words = shlex.split(line.replace("$ASSIGNMENT", "03_building_models"))
        assert words[:4] == [".venv/bin/python", "-m", "grader", "autograde"]
        assert build_parser().parse_args(words[3:]).shard == (shard, shards)
    assert workflow["jobs"]["report"]["needs"] == "grade"
