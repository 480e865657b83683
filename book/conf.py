# Sphinx configuration of the course's site; book/build.py writes the sources it reads (docs/site.md).
project = "PyTorch tips, measured"
author = "the course's authors"
html_title = project
language = "en"

extensions = ["myst_nb"]
source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = [".doctrees"]

nb_execution_mode = "off"        # the stored notebooks' outputs are shown; nothing runs here
nb_merge_streams = True
myst_heading_anchors = 3         # links to a section of another page: page.md#its-heading
suppress_warnings = ["myst.header"]  # lessons go from their title (#) to a topic (###) in places

html_theme = "sphinx_book_theme"
html_theme_options = {
    "home_page_in_toc": True,
    "show_toc_level": 2,
    "use_download_button": False,
    "use_fullscreen_button": False,
}
html_static_path = ["static"]
html_css_files = ["course.css"]
html_copy_source = False         # no second copy of each notebook under _sources/
html_show_sourcelink = False
html_last_updated_fmt = None
