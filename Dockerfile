# A reproducible image for learners and graders: `docker build -t torch-tips .`
#   docker run -p 8888:8888 torch-tips                     # JupyterLab on the notebooks
#   docker run torch-tips make test                        # the test suite
FROM python:3.11-slim-bookworm

RUN apt-get update \
 && apt-get install -y --no-install-recommends make git bubblewrap \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /course
# Install dependencies first so code edits do not invalidate the (large) torch layer.
COPY pyproject.toml README.md ./
RUN mkdir -p utils grader && touch utils/__init__.py grader/__init__.py \
 && python -m venv .venv && .venv/bin/pip install --no-cache-dir -e . \
 && touch .venv/.installed-stamp
COPY . .
ENV PATH=/course/.venv/bin:$PATH
EXPOSE 8888
CMD ["jupyter", "lab", "--ip=0.0.0.0", "--no-browser", "--allow-root", "notebooks/"]
