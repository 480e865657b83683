"""The explanations of outcomes (utils/why): valid, used, and complete for every comparison the notebooks make."""
import re
import tomllib

import nbformat
import pytest

from grader import course
from utils import records, why
from utils.comparison import group_records
from utils.present import Result, explanation, fields

KEY = re.compile(r"(T\d{3})(-[a-z0-9-]+)?")


def notebook_tips(assignment) -> set[str]:
    nb = nbformat.read(assignment.source_dir / assignment.notebook_name, as_version=4)
    return {t[4:] for c in nb.cells for t in c.metadata.get("tags", []) if t.startswith("tip:")}


def test_every_table_is_valid_and_belongs_to_its_notebook():
    tables = why.load()
    assert tables, "utils/why holds no table"
    for path in sorted(why.FOLDER.glob("*.toml")):
        assignment = course.find(path.stem)  # one file per notebook, named after it
        sources = (assignment.source_dir / assignment.notebook_name).read_text(encoding="utf-8")
        for key in tomllib.loads(path.read_text(encoding="utf-8")):
            match = KEY.fullmatch(key)
            assert match, f"{path.name}: [{key}] is not a tip ID, optionally with a -suffix"
            assert match.group(1) in notebook_tips(assignment), f"{path.name}: [{key}] is not a tip of {path.stem}"
            if match.group(2):  # a named table is chosen with why="..." in the notebook
                assert f'why=\\"{key}\\"' in sources, f"{path.name}: no comparison in {path.stem} says why=\"{key}\""


@pytest.mark.parametrize("bad,error", [
    ('[T001]\ncpu.fast = "x"\n', "not an outcome"),
    ('[T001]\nlaptop.faster = "x"\n', "device kinds"),
    ('[T001]\ncpu.faster = ""\n', "non-empty"),
    ('[T001]\ncpu.faster = "{unclosed"\n', "not a valid template"),
])
def test_a_malformed_table_is_refused_with_its_place(tmp_path, bad, error):
    (tmp_path / "00_x.toml").write_text(bad)
    with pytest.raises(ValueError, match=error) as raised:
        why.load(tmp_path)
    assert "00_x.toml: [T001]" in str(raised.value)


def test_a_key_defined_twice_is_refused(tmp_path):
    (tmp_path / "00_a.toml").write_text('[T001]\ncpu.faster = "a"\n')
    (tmp_path / "00_b.toml").write_text('[T001]\ncpu.faster = "b"\n')
    with pytest.raises(ValueError, match="defined twice"):
        why.load(tmp_path)


def test_the_device_sentence_wins_and_the_note_follows(tmp_path, monkeypatch):
    (tmp_path / "00_x.toml").write_text('[T001]\nany.faster = "any"\ncpu.faster = "cpu"\nany.otherwise = "other"\n'
                                       'gpu.note = "gpu note"\ncpu.unmeasured = "would show"\n')
    monkeypatch.setattr(why, "FOLDER", tmp_path)
    assert why.templates("T001", "cpu", "faster") == ["cpu"]
    assert why.templates("T001", "gpu", "faster") == ["any", "gpu note"]
    assert why.templates("T001", "gpu", "no clear difference") == ["other", "gpu note"]
    assert why.templates("T001", "cpu", "unmeasured") == ["would show"]
    assert why.templates("T001", "gpu", "unmeasured") == []  # "otherwise" and "note" are for measured outcomes


@pytest.mark.parametrize("assignment_id", [a.id for a in course.assignments()])
def test_every_comparison_has_sentences_that_its_figures_fill(assignment_id, quick_runs):
    """Every comparison a QUICK run recorded: its table exists, and every sentence of it, for every
    device and outcome (the GPU ones included), names only figures that comparison gives."""
    _, records_file, _ = quick_runs[assignment_id]
    tables = why.load()
    for group in group_records(records.load(records_file)):
        result = Result.from_records(group)
        assert result.why_key in tables, f"{assignment_id}: no utils/why table [{result.why_key}] for '{result.title}'"
        given = set(fields(result))
        for device, sentences in tables[result.why_key].items():
            for outcome, text in sentences.items():
                missing = why.field_names(text) - given
                assert not missing, (f"[{result.why_key}] {device}.{outcome} names {sorted(missing)}, which "
                                     f"'{result.title}' does not give ({sorted(given)})")
        assert explanation(result), f"[{result.why_key}] has no sentence for this outcome on the CPU"
