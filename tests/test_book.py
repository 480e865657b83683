"""The course's static site (`make book`, book/build.py): built once here into a tmp dir, served over
http (search needs it) and read in Debian's Chromium headless shell through Playwright, as tests/test_browser.py does.

The home page links every lesson; a lesson page shows the stored run's cards and plots under a note
naming that run; search finds a tip by its ID; no link inside the site is broken; nothing is loaded
from outside it; and no page shows an exercise's solution or a machine's private path.
"""
from __future__ import annotations

import functools
import html
import http.server
import json
import re
import subprocess
import sys
import threading
import urllib.parse
import urllib.request
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import expect

REPO = Path(__file__).resolve().parent.parent
LESSON = "04_training_loop"
TIPS = [("T054", "04_training_loop"), ("T092", "08_compile_fuse"), ("T106", "11_inference")]

sys.path.insert(0, str(REPO / "book"))
import build as book  # noqa: E402  (book/build.py: the site's build, not a package)

pytestmark = pytest.mark.busy  # a Sphinx build and Chromium


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built by the command `make book` runs."""
    out = tmp_path_factory.mktemp("book") / "site"
    subprocess.run([sys.executable, str(REPO / "book" / "build.py"), "--out", str(out)], cwd=REPO, check=True, timeout=600)
    assert (out / "index.html").is_file()
    return out


@pytest.fixture(scope="module")
def url(site):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def page(request, browser, url, tmp_path):
    """A page that records every request leaving the site (the site must work offline). A failed
    test leaves a screenshot of it in its tmp dir."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(60_000)  # 2 busy cores
    page.outside = []
    page.on("request", lambda r: None if r.url.startswith((url, "data:", "about:")) else page.outside.append(r.url))
    failed_before = request.session.testsfailed
    yield page
    if request.session.testsfailed > failed_before:
        page.screenshot(path=tmp_path / "page.png", full_page=True)
        print(f"screenshot: {tmp_path / 'page.png'}")
    page.close()


def run_manifest() -> dict:
    return json.loads((book.reference_with_notebooks() / "run.json").read_text(encoding="utf-8"))


# ---------------------------------------------------------------- in the browser

def test_the_home_page_opens_and_links_every_lesson(page, url):
    page.goto(f"{url}/index.html")
    assert page.locator("h1").first.inner_text().startswith("PyTorch tips")
    links = page.locator("article a.reference.internal").evaluate_all("els => els.map(a => a.getAttribute('href'))")
    for name in book.lessons():
        assert f"lessons/{name}.html" in links, f"the home page does not link {name}"
    page.locator(f"article a[href='lessons/{LESSON}.html']").first.click()
    page.wait_for_url(f"**/lessons/{LESSON}.html")
    assert page.locator("h1").first.inner_text().startswith(LESSON[:2])
    assert not page.outside, f"loaded from outside the site: {page.outside}"


def test_a_lesson_shows_the_reference_runs_cards_and_plots_under_a_note_naming_the_run(page, url):
    page.goto(f"{url}/lessons/{LESSON}.html")
    run = run_manifest()
    note = page.locator(".course-reference")
    assert note.count() == 1
    text = note.inner_text()
    for fact in (run["device_name"], run["commit"][:7], run["date"][:10], "own numbers", "make lab",
                 f"notebooks/{LESSON}/{LESSON}.ipynb"):
        assert fact in text, f"the note on top of the lesson lacks {fact!r}: {text}"
    # The note comes first, right under the title.
    assert page.evaluate("() => document.querySelector('h1').compareDocumentPosition("
                         "document.querySelector('.course-reference')) & Node.DOCUMENT_POSITION_FOLLOWING")
    card = page.locator(".course-card", has=page.locator("table")).filter(has_text="T054").first
    assert card.locator("th", has_text="variant").count() >= 1
    assert card.locator("td", has_text="baseline").count() >= 1
    plots = page.locator(".cell_output img[data-plot]")
    assert plots.count() >= 2
    plots.first.scroll_into_view_if_needed()
    widths = plots.evaluate_all("imgs => imgs.map(i => i.complete ? i.naturalWidth : 0)")
    assert all(w > 0 for w in widths), f"a plot did not load: natural widths {widths}"
    assert page.locator(".course-progress progress").count() >= 1  # tqdm's bars, as they ended
    assert not page.outside, f"loaded from outside the site: {page.outside}"


@pytest.mark.parametrize("tip, lesson", TIPS)
def test_search_finds_a_tip_by_its_id(page, url, tip, lesson):
    page.goto(f"{url}/search.html?q={tip}")
    hit = page.locator(f"#search-results a[href*='lessons/{lesson}.html']")
    hit.first.wait_for()
    # Sphinx fills each hit's summary after listing the pages: wait for the tip's own text
    expect(page.locator("#search-results")).to_contain_text(tip, timeout=30_000)
    assert not page.outside, f"loaded from outside the site: {page.outside}"


# ---------------------------------------------------------------- the built files

class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        for name in ("href", "src"):
            value = attrs.get(name)
            if value and (tag in ("a", "link", "script", "img", "iframe")) and not value.startswith("data:"):
                self.links.append((tag, value))


def _parse(path: Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def test_no_link_inside_the_site_is_broken(site, url):
    pages = sorted(p for p in site.rglob("*.html") if "_static" not in p.relative_to(site).parts)  # pages, not templates
    assert len(pages) >= 12 + 8 + 1
    parsed = {p: _parse(p) for p in pages}
    broken, outside, checked = [], [], {}
    for path, found in parsed.items():
        page_url = f"{url}/{path.relative_to(site).as_posix()}"
        for tag, link in found.links:
            target = urllib.parse.urljoin(page_url, link)
            if not target.startswith(url + "/"):
                if tag != "a":  # a stylesheet, script or image from elsewhere: the site would not work offline
                    outside.append(f"{path.name}: {link}")
                continue
            bare, _, anchor = target.partition("#")
            bare = bare.partition("?")[0]
            if bare not in checked:
                try:
                    with urllib.request.urlopen(bare) as response:
                        checked[bare] = response.status
                except OSError as error:
                    checked[bare] = getattr(error, "code", str(error))
            if checked[bare] != 200:
                broken.append(f"{path.relative_to(site)}: {link} -> {checked[bare]}")
            elif anchor and bare.endswith(".html"):
                file = site / urllib.parse.unquote(bare.removeprefix(url + "/"))
                if urllib.parse.unquote(anchor) not in parsed[file].ids:
                    broken.append(f"{path.relative_to(site)}: {link} -> no #{anchor} there")
    assert not broken, "broken links:\n" + "\n".join(broken)
    assert not outside, "resources from outside the site:\n" + "\n".join(outside)
    assert len(checked) > 30


def test_no_lesson_shows_a_solution_or_a_private_path(site):
    for name in book.lessons():
        text = html.unescape(re.sub(r"<[^>]+>", "", (site / "lessons" / f"{name}.html").read_text(encoding="utf-8")))
        assert "raise NotImplementedError()" in text, f"{name}: the exercises' stubs are missing"
        for secret in ("BEGIN SOLUTION", "END SOLUTION", "HIDDEN TESTS", "application/vnd.pytorch-course.records"):
            assert secret not in text, f"{name}: {secret!r} on the page"
        for private in (str(REPO), "/home/", "/root/", "token="):  # what a run's outputs could carry
            assert private not in text, f"{name} shows {private!r}"


# ---------------------------------------------------------------- the sanitizer and the stored notebooks

def test_sanitize_keeps_what_the_learner_sees_and_drops_the_machine_and_the_answers():
    nb = nbformat.v4.new_notebook()
    nb.metadata.update({"papermill": {"input_path": "/srv/runner/co/solutions/x/x.ipynb",
                                      "output_path": "/scratch/run7/executed/x.ipynb"},
                        "widgets": {book.WIDGET_STATE: {"state": {}}}, "kernelspec": {"name": "python3", "display_name": "Python 3"}})
    shown = nbformat.v4.new_code_cell("show()", outputs=[
        nbformat.v4.new_output("display_data", {"text/html": "<table><tr><td>/srv/runner/co/build/t.json</td></tr></table>",
                                                "text/plain": "t.json"}),
        nbformat.v4.new_output("display_data", {"application/vnd.pytorch-course.records+json": {"records": []}}),
        nbformat.v4.new_output("stream", name="stdout", text="saved to /home/alice/x and /root/y?token=abc123\n"),
        nbformat.v4.new_output("display_data", {"image/png": "iVBORw0KGgo="}),
    ])
    shown.metadata.update({"papermill": {"duration": 1.0}, "execution": {"x": 1}, "tags": ["keep"]})
    answer = nbformat.v4.new_code_cell("### BEGIN SOLUTION\nanswer = 42\n### END SOLUTION",
                                       outputs=[nbformat.v4.new_output("stream", name="stdout", text="42\n")])
    answer.metadata["nbgrader"] = {"solution": True, "grade": False, "grade_id": "a", "locked": False, "schema_version": 3}
    nb.cells = [nbformat.v4.new_markdown_cell("# T"), shown, answer]
    found = {}
    clean = book.sanitize(nb, found)
    assert set(clean.metadata) == {"kernelspec"}
    cell = clean.cells[1]
    assert cell.metadata == {"tags": ["keep"]}
    assert [list(o.get("data", {})) or o.output_type for o in cell.outputs] == \
        [["text/html", "text/plain"], "stream", ["image/png"]]
    assert "<checkout>/build/t.json" in cell.outputs[0].data["text/html"]
    assert cell.outputs[1].text == "saved to ~/x and ~/y?token=<redacted>\n"
    assert found
    assert "answer = 42" not in clean.cells[2].source and "NotImplementedError" in clean.cells[2].source
    assert clean.cells[2].outputs == []
    assert book.sanitize(clean) == clean  # twice changes nothing


def test_every_lesson_has_a_stored_executed_notebook_compressed_and_clean():
    folder = book.reference_with_notebooks() / book.EXECUTED
    assert sorted(p.name for p in folder.iterdir()) == [f"{n}{book.SUFFIX}" for n in book.lessons()]
    for path in folder.iterdir():
        nb = book._read_gz(path)
        assert "papermill" not in nb.metadata and "widgets" not in nb.metadata, path.name
        assert book.sanitize(nb) == nb, f"{path.name} was stored unsanitized: python book/build.py store ..."
        assert any(o for c in nb.cells if c.cell_type == "code" for o in c.outputs), f"{path.name} has no outputs"
        assert re.search(r"^## T\d{3}", "\n".join(c.source for c in nb.cells if c.cell_type == "markdown"), re.M)
