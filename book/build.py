"""The course as a static website (`make book`): the docs pages and the twelve lessons as a reference
GPU run executed them, built with Sphinx and MyST-NB into one site with navigation and search.

    python book/build.py                                  # -> build/book/index.html
    python book/build.py --out DIR [--reference NAME]     # another folder; another stored run
    python book/build.py store build/executed --reference h100-2026-12-01   # after a GPU run

Nothing is executed here. ``store`` sanitizes a run's executed notebooks (machine paths, tokens,
papermill and widget metadata, the exercises' solutions and their outputs, the course's records
payload that no page shows) and keeps them gzip-compressed as
``references/NAME/executed/NN_topic.ipynb.gz``, beside that run's records and ``run.json``
(compressed, so that the rule "committed notebooks carry no outputs" still holds for every
``.ipynb``). The build sanitizes them again, adds a note on top of each lesson (which run, which
device; yours will show its own numbers; how to open it in JupyterLab), copies README.md (the
home page), docs/*.md, SOURCES.md and references/README.md beside them with their links to repo
files that are not pages turned into code, and runs sphinx-build with warnings as errors.
"""
from __future__ import annotations

import argparse
import copy
import gzip
import html
import json
import os
import re
import shutil
import sys
from datetime import datetime
from pathlib import Path

import nbformat

BOOK = Path(__file__).resolve().parent
REPO = BOOK.parent
REFERENCES = REPO / "references"
SOLUTIONS = REPO / "solutions"
EXECUTED = "executed"
SUFFIX = ".ipynb.gz"
# Repo files that become pages, and their place in the site (the site mirrors the repo's layout).
PAGES = {"README.md": "index.md", "SOURCES.md": "SOURCES.md", "references/README.md": "references/README.md"}
# What a page can show; anything else (the course's records payload, widget views) is dropped.
SHOWN = ("text/html", "image/png", "image/jpeg", "image/svg+xml", "text/markdown", "text/plain")
STUBS = re.compile(r"YOUR CODE HERE|YOUR ANSWER HERE")  # nbgrader's stubs for a cleared solution
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
PRIVATE = [  # (pattern, replacement): what identifies a machine or a person
    (re.compile(r"/(?:home|Users)/[^/\s\"'<>]+"), "~"),
    (re.compile(r"(?<![\w.])/root(?=/|\b)"), "~"),
    (re.compile(r"((?:token|access_token|api_key|password)=)[^&\s\"'<>]+", re.I), r"\1<redacted>"),
]


# ---------------------------------------------------------------- sanitizing an executed notebook

def lessons() -> list[str]:
    """The lesson ids, in course order: the folders of solutions/."""
    return sorted(p.name for p in SOLUTIONS.iterdir() if (p / f"{p.name}.ipynb").is_file())


def _run_roots(nb) -> list[tuple[str, str]]:
    """The run's own folders (papermill's input and output paths), as <checkout> and <out>."""
    pm = nb.metadata.get("papermill", {})
    roots = []
    if pm.get("input_path"):  # <checkout>/solutions/NN/NN.ipynb
        roots.append((str(Path(pm["input_path"]).parents[2]), "<checkout>"))
    if pm.get("output_path"):  # <out>/executed/NN.ipynb
        roots.append((str(Path(pm["output_path"]).parents[1]), "<out>"))
    return [(root, name) for root, name in roots if root not in ("/", ".")]


def _scrub(text: str, roots: list[tuple[str, str]], found: dict) -> str:
    for root, name in sorted(roots, key=lambda r: -len(r[0])):
        if root in text:
            found[root] = found.get(root, 0) + text.count(root)
            text = text.replace(root, name)
    for pattern, replacement in PRIVATE:
        text, n = pattern.subn(replacement, text)
        if n:
            found[pattern.pattern] = found.get(pattern.pattern, 0) + n
    return text


def _progress(model_id: str, state: dict) -> dict | None:
    """A tqdm bar (an ipywidgets HBox: text, progress, text) as it last looked, as HTML and text."""
    box = state.get(model_id, {}).get("state", {})
    children = [state.get(c.removeprefix("IPY_MODEL_"), {}).get("state", {}) for c in box.get("children", [])]
    if len(children) != 3 or "max" not in children[1]:
        return None
    left, bar, right = (children[0].get("value", ""), children[1], children[2].get("value", ""))
    done = round(10 * (bar.get("value") or 0) / (bar.get("max") or 1))
    text = f"{html.unescape(left)}|{'█' * done}{' ' * (10 - done)}|{html.unescape(right)}"
    page = (f'<div class="course-progress"><span>{left}</span> <progress value="{bar.get("value") or 0}" '
            f'max="{bar.get("max") or 1}"></progress> <span>{right}</span></div>')
    return {"text/html": page, "text/plain": text}


def _outputs(outputs: list, widgets: dict) -> list:
    kept = []
    for out in outputs:
        if "data" in out:
            view = out["data"].get(WIDGET_VIEW)
            if view:
                out["data"] = _progress(view.get("model_id", ""), widgets) or \
                    {k: v for k, v in out["data"].items() if k == "text/plain"}
            out["data"] = {k: v for k, v in out["data"].items() if k in SHOWN}
            if not out["data"]:
                continue
            out["metadata"] = {k: v for k, v in out.get("metadata", {}).items() if k in SHOWN}
        kept.append(out)
    return kept


def sanitize(nb, found: dict | None = None):
    """A copy of ``nb`` as a page may show it: what the learner sees, nothing of the machine or the
    answers. ``found`` counts each private string replaced. Sanitizing twice changes nothing."""
    from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions

    found = {} if found is None else found
    nb = copy.deepcopy(nb)
    roots = _run_roots(nb)
    widgets = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    nb.metadata = nbformat.from_dict({k: v for k, v in nb.metadata.items() if k in ("kernelspec", "language_info", "course")})
    # The released notebook's stubs, as nbgrader writes them, in the cells that still hold a solution
    # (a starter cell, once cleared, keeps its starter code: it is not cleared twice).
    answers = [i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("solution")
               and ("BEGIN SOLUTION" in c.source or not STUBS.search(c.source))]
    part = nbformat.v4.new_notebook(metadata=nb.metadata, cells=[nb.cells[i] for i in answers])
    part, _ = ClearSolutions().preprocess(part, {})
    for i, cell in zip(answers, part.cells):
        nb.cells[i] = cell
    nb, _ = ClearHiddenTests().preprocess(nb, {})
    for cell in nb.cells:
        cell.metadata = nbformat.from_dict({k: v for k, v in cell.metadata.items() if k in ("tags", "nbgrader")})
        grading = cell.metadata.get("nbgrader", {})
        cell.source = _scrub(cell.source, roots, found)
        if cell.cell_type != "code":
            continue
        if grading.get("solution") or grading.get("grade"):
            cell.outputs = []  # the answer's outputs, and the checks', are not the learner's to read
        cell.outputs = _outputs(cell.outputs, widgets)
        for out in cell.outputs:
            if "text" in out:
                out["text"] = _scrub(out["text"], roots, found)
            for mime, value in out.get("data", {}).items():
                if isinstance(value, str) and not mime.startswith("image/"):
                    out["data"][mime] = _scrub(value, roots, found)
    return nb


def _read_gz(path: Path):
    return nbformat.reads(gzip.decompress(path.read_bytes()).decode("utf-8"), as_version=4)


def store(executed: Path, reference: str) -> Path:
    """Sanitize a run's executed notebooks into ``references/<reference>/executed/*.ipynb.gz``."""
    folder = REFERENCES / reference
    if not (folder / "run.json").is_file():
        raise SystemExit(f"{folder / 'run.json'} is missing: add the run's records first "
                         f"(python -m utils.references add <run> --name {reference})")
    target = folder / EXECUTED
    target.mkdir(exist_ok=True)
    missing = [name for name in lessons() if not (executed / f"{name}.ipynb").is_file()]
    if missing:
        raise SystemExit(f"{executed} lacks executed notebooks for {', '.join(missing)}")
    total = 0
    for name in lessons():
        found: dict = {}
        nb = sanitize(nbformat.read(executed / f"{name}.ipynb", as_version=4), found)
        data = gzip.compress(nbformat.writes(nb).encode("utf-8"), compresslevel=9, mtime=0)
        (target / f"{name}{SUFFIX}").write_bytes(data)
        total += len(data)
        print(f"{name}: {len(data) / 1e6:.2f} MB" + "".join(f"; replaced {n}x {what!r}" for what, n in found.items()))
    print(f"{target}: {total / 1e6:.1f} MB in all")
    return target


# ---------------------------------------------------------------- the site's sources

def reference_with_notebooks(name: str | None = None) -> Path:
    """The stored run whose executed notebooks the site shows: ``name``, else the latest one."""
    if name:
        folder = REFERENCES / name
        if not (folder / EXECUTED).is_dir():
            raise SystemExit(f"{folder / EXECUTED} does not exist: python book/build.py store <run>/executed --reference {name}")
        return folder
    found = [p.parent for p in REFERENCES.glob(f"*/{EXECUTED}") if (p.parent / "run.json").is_file()]
    if not found:
        raise SystemExit("no reference run in references/ holds executed notebooks: see docs/site.md")
    return max(found, key=lambda p: (json.loads((p / "run.json").read_text(encoding="utf-8")).get("date", ""), p.name))


def banner(name: str, run: dict, reference: str) -> str:
    """The note on top of a lesson page: where its outputs come from, and how to run it yourself."""
    date = datetime.fromisoformat(run["date"]).date().isoformat() if run.get("date") else "an unrecorded date"
    mode = "QUICK" if run.get("quick") else "full"
    notebook = f"notebooks/{name}/{name}.ipynb"
    return (f"```{{admonition}} Outputs from a reference run on an {run.get('device_name', 'unnamed device')}\n"
            f":class: note course-reference\n\n"
            f"Every output on this page comes from one run of the course on an **{run.get('device_name', '?')}** "
            f"({mode} mode, torch {run.get('torch', '?')}, commit `{str(run.get('commit', '?'))[:7]}`, "
            f"{date}; stored as `references/{reference}/`). Your own device will show its own numbers: "
            f"every measurement is made again when you run the notebook.\n\n"
            f"To run it: `make lab`, then open `{notebook}` in JupyterLab.\n```")


LINK = re.compile(r"(?<!!)\[((?:[^\]`]|`[^`]*`)*)\]\(([^()\s]+)\)|(`+)[^`]*?\3")


def _rewrite_links(text: str, source: str, page_of: dict[str, str]) -> str:
    """Links in a repo markdown file made to work in the site: to a page, the page's place in the
    site; to another repo file, the file's repo path as code (the site holds no repo files)."""
    here = Path(PAGES.get(source, source)).parent

    def replace(match: re.Match) -> str:
        if match.group(2) is None:  # inline code: left as it is
            return match.group(0)
        label, target = match.group(1), match.group(2)
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            return match.group(0)
        path, _, anchor = target.partition("#")
        resolved = (REPO / source).parent.joinpath(path).resolve()
        try:
            rel = resolved.relative_to(REPO).as_posix()
        except ValueError:
            raise SystemExit(f"{source}: the link {target!r} leaves the repository")
        if rel in page_of:
            link = Path(os.path.relpath(page_of[rel], here)).as_posix()
            return f"[{label}]({link}{'#' + anchor if anchor else ''})"
        if not resolved.exists():
            raise SystemExit(f"{source}: the link {target!r} points at {rel}, which does not exist")
        shown = label.strip("`")
        return f"`{rel}`" if shown in (rel, path, target) else f"{label} (`{rel}`)"

    out, fenced = [], False
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        out.append(line if fenced else LINK.sub(replace, line))
    return "".join(out)


def write_sources(src: Path, reference: Path) -> None:
    """The pages (markdown) and the lessons (executed notebooks) that sphinx-build reads."""
    run = json.loads((reference / "run.json").read_text(encoding="utf-8"))
    page_of = dict(PAGES)
    page_of.update({p.relative_to(REPO).as_posix(): p.relative_to(REPO).as_posix() for p in (REPO / "docs").glob("*.md")})
    for repo_path, site_path in page_of.items():
        text = _rewrite_links((REPO / repo_path).read_text(encoding="utf-8"), repo_path, page_of)
        if site_path == "index.md":
            text += index_toctrees(sorted(p for p in page_of.values() if p.startswith("docs/")))
        (src / site_path).parent.mkdir(parents=True, exist_ok=True)
        (src / site_path).write_text(text, encoding="utf-8")
    (src / "lessons").mkdir()
    for name in lessons():
        stored = reference / EXECUTED / f"{name}{SUFFIX}"
        if not stored.is_file():
            raise SystemExit(f"{stored} is missing: store the run's executed notebooks (docs/site.md)")
        nb = sanitize(_read_gz(stored))
        note = banner(name, run, reference.name)
        title = next((c for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("# ")), None)
        if title is None:
            raise SystemExit(f"{stored}: the lesson has no title (a markdown cell starting with '# ')")
        heading, _, rest = title.source.partition("\n")
        title.source = f"{heading}\n\n{note}\n\n{rest.lstrip()}"  # the note right under the lesson's title
        nbformat.write(nb, src / "lessons" / f"{name}.ipynb", version=4)


def index_toctrees(docs: list[str]) -> str:
    lesson_list = "\n".join(f"lessons/{name}" for name in lessons())
    doc_list = "\n".join(d.removesuffix(".md") for d in docs + ["SOURCES.md", "references/README.md"])
    return ("\n## The lessons, as a reference GPU run executed them\n\n"
            "Each lesson page shows one stored run's outputs (its device, torch and commit are named on top of the "
            "page). To run a lesson yourself: `make lab`, then open `notebooks/NN_topic/NN_topic.ipynb`.\n\n"
            f"```{{toctree}}\n:caption: Lessons\n:maxdepth: 1\n\n{lesson_list}\n```\n\n"
            f"```{{toctree}}\n:caption: Documentation\n:maxdepth: 1\n:hidden:\n\n{doc_list}\n```\n")


# ---------------------------------------------------------------- the build

def build(out: Path, reference: str | None = None) -> Path:
    """Build the site into ``out`` (its sources beside it, in ``<out>-src``); returns index.html."""
    from sphinx.cmd.build import build_main

    out = out.resolve()
    src = out.with_name(out.name + "-src")
    for folder in (src, out):
        shutil.rmtree(folder, ignore_errors=True)
    src.mkdir(parents=True)
    write_sources(src, reference_with_notebooks(reference))
    status = build_main(["-b", "html", "-q", "-W", "--keep-going", "-c", str(BOOK), "-d", str(src / ".doctrees"),
                         str(src), str(out)])
    if status:
        raise SystemExit(f"sphinx-build failed (status {status})")
    print(f"the course's site: {out / 'index.html'}")
    return out / "index.html"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python book/build.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=REPO / "build" / "book", help="the site's folder (build/book)")
    parser.add_argument("--reference", help="the stored run to show (the latest with executed notebooks)")
    sub = parser.add_subparsers(dest="command")
    keep = sub.add_parser("store", help="keep a run's executed notebooks, sanitized, in references/NAME/executed/")
    keep.add_argument("executed", type=Path, help="the run's executed/ folder (python -m utils.execute --out DIR)")
    keep.add_argument("--reference", required=True, help="the reference run's name (references/NAME/run.json)")
    args = parser.parse_args(argv)
    if args.command == "store":
        store(args.executed, args.reference)
    else:
        build(args.out, args.reference)


if __name__ == "__main__":
    sys.exit(main())
