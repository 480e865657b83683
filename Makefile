# One entry point for learners, instructors and CI. Everything runs inside .venv, created on demand.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
COURSE := build/course
# nbgrader calls the `alembic` executable by name: the venv's bin/ must be on PATH.
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: env system-tools notebooks run test lab clean

env: $(STAMP) system-tools

## The grader runs student code under bubblewrap (Debian package); install it when missing.
system-tools:
	@command -v bwrap >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null; \
	  else echo "bubblewrap is missing: run 'sudo apt-get install bubblewrap'" >&2; exit 1; fi; }

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	@touch $(STAMP)

## Regenerate the released notebooks (notebooks/) from the sources (solutions/) with nbgrader.
notebooks: env
	$(PY) -m grader generate

## Execute every solution notebook (QUICK mode), write build/report.html, then grade the sample submissions.
run: env
	$(PY) -m utils.execute --out build
	rm -rf $(COURSE)/submitted
	$(PY) -m grader samples --course-dir $(COURSE)
	$(PY) -m grader autograde --course-dir $(COURSE)
	$(PY) -m grader export --course-dir $(COURSE) --to build/grades.csv
	@echo "grades: build/grades.csv (nbgrader lists every student for every assignment; 0 where nothing was submitted)"

## The test suite.
test: env
	$(PY) -m pytest

## JupyterLab on the learner notebooks.
lab: env
	$(VENV)/bin/jupyter lab notebooks/

clean:
	rm -rf build
