"""formgrader's per-student "Autograde" button (and a plain ``nbgrader autograde``) routed to the
course grader.

nbgrader's own autograde runs the student's notebook unsandboxed, with the visible tests only,
and would overwrite the course grader's scores. The course's ``nbgrader_config.py`` therefore
gives nbgrader's Autograde no preprocessors (it executes nothing and scores nothing; it only
files the submission) and this post-convert hook, which grades that submission again with
``python -m grader autograde --force``: sandbox, hidden checks, the course grader's gradebook
entries and feedback notebook.
"""
from __future__ import annotations

import os
import subprocess
import sys

CONFIG = '''
# formgrader's "Autograde" button and `nbgrader autograde` run the course grader (sandboxed, hidden
# checks) instead of nbgrader's own unsandboxed autograde: see grader/formgrader.py.
c.Autograde.sanitize_preprocessors = []
c.Autograde.autograde_preprocessors = []
c.Autograde.post_convert_hook = "grader.formgrader.autograde_with_course_grader"
'''


def autograde_with_course_grader(assignment: str, student: str, notebooks=None, **_) -> None:
    """nbgrader calls this in the course directory (its converters chdir there) after filing the
    submission. A failure is printed to the server's log; nbgrader swallows exceptions from hooks."""
    argv = [sys.executable, "-m", "grader", "autograde", "--course-dir", os.getcwd(), "--assignment", assignment,
            "--student", student, "--force", "--workers", "1"]  # --db-url comes from GRADER_DB_URL, as here
    done = subprocess.run(argv, capture_output=True, text=True)
    sys.stderr.write(done.stdout + done.stderr)
    if done.returncode != 0:
        raise RuntimeError(f"the course grader failed for {student}/{assignment} (exit {done.returncode})")
