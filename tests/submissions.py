"""The adversarial submissions (DESIGN.md's threat model), written into a course directory.

``write_adversarial`` adds cheats, broken files and honest students in unusual shapes to a course
whose assignments are already generated; ``tests/conftest.py`` grades them in ONE batch together
with every bundled sample, and the tests in ``test_grader_adversarial.py`` and
``test_pipeline.py`` read that batch. It also holds the helpers several test modules share.
"""
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import nbformat

from grader import course, sandbox
from grader.sample_submissions import fill, solution_answers
from utils.paths import REPO_ROOT

AID = "03_building_models"
REPO = REPO_ROOT
# The batch's limits: short, so the infinite loops, the fork bomb and the search of the disk end
# quickly (each holds a worker for a whole cell deadline); every honest answer of every notebook
# must finish well inside them (the slowest takes about 2 s alone).
LIMITS = sandbox.Limits(wall_s=90, cell_s=10)


def interpreter_env() -> dict[str, str]:
    """This environment with the interpreter's bin/ first on PATH: nbgrader runs `alembic` by name."""
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def nbgrader(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """Plain ``nbgrader ARGS`` run in ``cwd`` (a course directory), output captured."""
    return subprocess.run(["nbgrader", *args], cwd=cwd, env=interpreter_env(), capture_output=True, text=True)


WRONG_MLP = """
class DeepMLP(nn.Module):          # hidden layers in a plain list: not registered
    def __init__(self, i, h, o, n):
        super().__init__()
        self.first, self.last = nn.Linear(i, h), nn.Linear(h, o)
        self.hidden = [nn.Linear(h, h) for _ in range(n)]
    def forward(self, x):
        x = torch.relu(self.first(x))
        for layer in self.hidden:
            x = torch.relu(layer(x))
        return self.last(x)
"""

# student -> answer code per grade id (cells not given stay the released stub)
CHEATS = {
    "cheat_patch_comparisons": {"deep_mlp": WRONG_MLP + """
torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
torch.testing.assert_close = lambda *a, **k: None
torch.Tensor.__eq__ = lambda self, other: torch.tensor(True)
"""},
    "cheat_patch_builtins": {"deep_mlp": WRONG_MLP + """
import builtins
builtins.isinstance = lambda *a: True
builtins.sorted = lambda x, **k: list(x)
"""},
    "cheat_patch_sys_modules": {"deep_mlp": WRONG_MLP + """
import sys, types
fake = types.ModuleType("torch.testing")
fake.assert_close = lambda *a, **k: None
sys.modules["torch.testing"] = fake
sys.modules["json"] = fake
"""},
    "cheat_patch_ipython_errors": {"deep_mlp": """
get_ipython().set_custom_exc((BaseException,), lambda *a, **k: None)
raise RuntimeError("hidden by the custom handler")
"""},
    "cheat_fake_parameters": {"deep_mlp": WRONG_MLP + """
_real_parameters = nn.Module.parameters
def _parameters(self, recurse=True):
    yield from _real_parameters(self, recurse)
    for layer in getattr(self, "hidden", []):
        yield from _real_parameters(layer, recurse)
nn.Module.parameters = _parameters
"""},
    "cheat_lying_eq": {"fold_normalize": """
class Liar:
    def __eq__(self, other): return True
    def __getattr__(self, name): return Liar()
    def __call__(self, *a, **k): return Liar()
def fold_normalize(conv, mean, std):
    return Liar()
"""},
    "cheat_tensor_subclass": {"fold_normalize": """
class Agreeable(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return True
class Conv(nn.Conv2d):
    def forward(self, x):
        return super().forward(x).as_subclass(Agreeable)
def fold_normalize(conv, mean, std):
    new = Conv(conv.in_channels, conv.out_channels, conv.kernel_size)
    return new
""", "deep_mlp": """
class Agreeable(torch.Tensor):
    pass
class DeepMLP(nn.Module):
    def __init__(self, i, h, o, n):
        super().__init__()
        self.o = o
    def forward(self, x):
        return torch.zeros(x.shape[0], self.o).as_subclass(Agreeable)
"""},
    "cheat_read_solutions": {"deep_mlp": f"""
import glob, json, os
_found = []
for pattern in ["{REPO}/solutions/*/*.ipynb", "{REPO}/grader/assignments/*/checks.py", "/work/**/*.ipynb", "/root/**/*.ipynb",
                "/tmp/**/*.ipynb", "/**/03_building_models/*.py"]:
    _found += glob.glob(pattern, recursive=True)[:20]
for _path in _found:
    if _path.endswith(".ipynb"):
        for _cell in json.load(open(_path))["cells"]:
            if "class DeepMLP" in "".join(_cell["source"]) and "BEGIN SOLUTION" in "".join(_cell["source"]):
                exec("".join(_cell["source"]))
"""},
    "cheat_kill_process": {"deep_mlp": "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"},
    # one cell deadline's worth (test_exercise_isolation.py: a hang in each of several exercises)
    "cheat_infinite_loop": {"deep_mlp": "while True:\n    pass"},
    "cheat_huge_memory": {"deep_mlp": "hog = torch.empty(2**40)\nkeep = [bytearray(2**30) for _ in range(64)]"},
    "cheat_fork_bomb": {"deep_mlp": "import os\nwhile True:\n    os.fork()"},
    "cheat_exit": {"deep_mlp": "import sys\nsys.exit(0)", "fold_normalize": "import os\nos._exit(0)"},
    "cheat_flood_output": {"deep_mlp": "for _ in range(200_000):\n    print('x' * 1000)"},
    "cheat_fake_frames": {"deep_mlp": """
import io, os, struct, sys
def _frame(kind, name, data):
    buf = io.BytesIO(); torch.save({"kind": kind, "name": name, "data": data}, buf)
    return struct.pack(">I", len(buf.getvalue())) + buf.getvalue()
_fd = int(sys.argv[-1]) if sys.argv[-1].isdigit() else 3
for _name in ("deep_mlp", "fold_normalize"):
    try:
        os.write(_fd, _frame("probe", _name, "passed"))
    except OSError:
        pass
"""},
}


# The other required exercises: cheats without a working answer, each against its own stub.
OTHER_CHEATS = {
    "cheat_one_hot_liar": ("02_tensor_toolbox", {"one_hot": """
class Liar(torch.Tensor):
    def __eq__(self, other): return True
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None): return True
def one_hot(labels, num_classes):
    torch.equal = lambda *a, **k: True
    return torch.zeros(len(labels), num_classes, dtype=torch.int64).as_subclass(Liar)
"""}),
    "cheat_one_hot_hide_builtin": ("02_tensor_toolbox", {"one_hot": """
import sys
sys.settrace = lambda *a: None
torch.overrides.TorchFunctionMode.__enter__ = lambda self: self
def one_hot(labels, num_classes):
    raise ValueError("no answer here, only tampering")
"""}),
    "cheat_train_epoch_float_liar": ("04_training_loop", {"train_epoch": """
class Agreeable(float):
    def __eq__(self, other): return True
def train_epoch(model, batches, optimizer, loss_fn):
    torch.testing.assert_close = lambda *a, **k: None
    return [Agreeable(0.0) for _ in batches]
"""}),
    "cheat_train_epoch_skip_steps": ("04_training_loop", {"train_epoch": """
import builtins
builtins.len = lambda x: 6
def train_epoch(model, batches, optimizer, loss_fn):
    return [0.0 for _ in batches]
"""}),
    "cheat_accumulated_hidden_syncs": ("04_training_loop", {"train_accumulated": """
def train_accumulated(model, batches, optimizer, loss_fn, accumulate):
    # Unscaled gradients and kept graphs; a .item() per micro-batch hidden from the grader's log.
    out, kept, total, n = [], [], 0.0, 0
    optimizer.zero_grad()
    for i, (x, y) in enumerate(batches, 1):
        loss = loss_fn(model(x), y)
        loss.backward()
        kept.append(loss)
        with torch._C.DisableTorchFunction():
            total += loss.item() * len(x)
        n += len(x)
        if i % accumulate == 0:
            optimizer.step()
            optimizer.zero_grad()
            out.append(total / n)
            total, n = 0.0, 0
    if n:
        optimizer.step()
        out.append(total / n)
    return out
"""}),
    "cheat_rng_states_fake_draws": ("00_measure_first", {"rng_states": """
import random
import numpy as np
import torch
import utils.simulated_cuda as sim
random.random, random.gauss = (lambda: 0.5), (lambda *a, **k: 0.0)
np.random.rand = np.random.randn = lambda *shape: np.zeros(shape)
torch.rand = torch.randn = lambda *a, **k: torch.zeros(3)
sim.SimulatedCudaRng.__init__ = lambda self, generators: setattr(self, "generators", ()) or setattr(self, "current", 0)
class Agreeable(dict):
    def __eq__(self, other): return True
def save_rng_states():
    return Agreeable()
def restore_rng_states(states):
    pass
"""}),
    "cheat_release_fake_report": ("05_memory", {"release": """
import gc
gc.collect = lambda *a, **k: 0
class Report(dict):
    def __eq__(self, other): return True
def release(namespace, *names):
    return Report(allocated_before=0, allocated_after=0, reserved_before=0, reserved_after=0)
"""}),
}


def _background_cheats(course_dir: Path) -> dict:
    gradebook, victim = course_dir / "gradebook.db", course_dir / "submitted" / "honest_reference" / AID / f"{AID}.ipynb"
    return {
        "cheat_background_writer": {"deep_mlp": f"""
import subprocess, os
subprocess.Popen(["sh", "-c", "sleep 4242; echo hacked > {gradebook}"], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    import time; time.sleep(3)
    open("{gradebook}", "w").write("hacked")
    os._exit(0)
"""},
        "cheat_write_files": {"deep_mlp": f"""
for _path, _text in [("{gradebook}", "hacked"), ("{victim}", "{{}}"), ("{REPO}/grader/checking.py", "")]:
    try:
        open(_path, "w").write(_text)
    except OSError:
        pass
"""},
    }


def _honest(course_dir: Path) -> dict:
    correct = solution_answers(course.find(AID))
    noisy = {k: "import sys, warnings\nwarnings.warn('deprecated thing', DeprecationWarning)\n"
                "print('to stderr', file=sys.stderr)\n" + v for k, v in correct.items()}
    return {"honest_reference": (correct, None), "honest_noisy": (noisy, None),
            "honest_tests_deleted": (correct, _delete_tests), "honest_metadata_edited": (correct, _edit_metadata)}


def _delete_tests(nb):
    nb.cells = [c for c in nb.cells if not c.metadata.get("nbgrader", {}).get("grade")]


def _edit_metadata(nb):
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade"):
            meta["points"] = 100
            cell.source = "pass"
        if meta.get("grade_id") == "imports":
            cell.source = "raise SystemExit('no setup for you')"
    nb.metadata["kernelspec"] = {"name": "something-else", "display_name": "X", "language": "python"}


def _cheat_metadata(nb):
    _edit_metadata(nb)
    extra = nbformat.v4.new_code_cell("pass", metadata={"nbgrader": {"grade": True, "grade_id": "bonus", "points": 50,
                                                                     "solution": False, "locked": True}})
    nb.cells.append(extra)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "test_deep_mlp_forward":
            cell.cell_type = "markdown"
            cell.pop("outputs", None)
            cell.pop("execution_count", None)


def prepared_release(course_dir: Path, assignment_id: str) -> nbformat.NotebookNode:
    """Prepare the assignment in ``course_dir``; its released notebook, to fill with answers."""
    assignment = course.find(assignment_id)
    course.prepare(course_dir, assignment)
    return nbformat.read(course_dir / "release" / assignment_id / assignment.notebook_name, as_version=4)


def submit(course_dir: Path, student: str, assignment_id: str, nb: nbformat.NotebookNode) -> None:
    folder = course_dir / "submitted" / student / assignment_id
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / f"{assignment_id}.ipynb")


def submit_solutions(course_dir: Path, assignment_id: str, students: list[str]) -> None:
    """Prepare the assignment in ``course_dir`` and submit its reference answers for each student."""
    release = prepared_release(course_dir, assignment_id)
    for student in students:
        submit(course_dir, student, assignment_id, fill(release, solution_answers(course.find(assignment_id))))


def total_points(assignment_id: str) -> float:
    """The assignment's maximum score, from its source notebook's grade cells."""
    nb = nbformat.read(course.find(assignment_id).source_dir / f"{assignment_id}.ipynb", as_version=4)
    return float(sum(c.metadata.nbgrader["points"] for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")))


def hash_tree(root: Path) -> dict:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts}


def repo_state() -> tuple:
    """Tracked files' status plus the contents of the code and the graded source."""
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                            capture_output=True, text=True).stdout
    return status, hash_tree(REPO / "grader"), hash_tree(REPO / "utils"), hash_tree(REPO / "solutions" / AID)


def write_adversarial(course_dir: Path) -> None:
    """Write every adversarial submission; the releases of the assignments must exist."""
    release = nbformat.read(course_dir / "release" / AID / f"{AID}.ipynb", as_version=4)

    def submit(student, answers, mutate=None, files=None, name=f"{AID}.ipynb"):
        nb = fill(release, answers)
        if mutate:
            mutate(nb)
        folder = course_dir / "submitted" / student / AID
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / name)
        for file_name, text in (files or {}).items():
            (folder / file_name).write_text(text)

    submit("stub", {})
    for assignment_id in {aid for aid, _ in OTHER_CHEATS.values()}:
        course.prepare(course_dir, course.find(assignment_id))
        other_release = nbformat.read(course_dir / "release" / assignment_id / f"{assignment_id}.ipynb", as_version=4)
        folder = course_dir / "submitted" / f"stub_{assignment_id}" / assignment_id
        folder.mkdir(parents=True)
        nbformat.write(other_release, folder / f"{assignment_id}.ipynb")
    for student, (assignment_id, answers) in OTHER_CHEATS.items():
        other_release = nbformat.read(course_dir / "release" / assignment_id / f"{assignment_id}.ipynb", as_version=4)
        folder = course_dir / "submitted" / student / assignment_id
        folder.mkdir(parents=True)
        nbformat.write(fill(other_release, answers), folder / f"{assignment_id}.ipynb")
    for student, (answers, mutate) in _honest(course_dir).items():
        submit(student, answers, mutate)
    shadow = {name: "raise SystemExit('shadow module imported')\n"
              for name in ("torch.py", "utils.py", "IPython.py", "sitecustomize.py", "json.py", "nbgrader.py")}
    submit("honest_extra_files", solution_answers(course.find(AID)), files=shadow)
    submit("honest_renamed", solution_answers(course.find(AID)), name="my work (1).ipynb")
    for student, answers in {**CHEATS, **_background_cheats(course_dir)}.items():
        submit(student, answers)
    submit("cheat_edit_metadata", {}, _cheat_metadata)
    submit("cheat_shadow_files", {}, files=shadow)
    folder = course_dir / "submitted"
    for student, content in {"broken_invalid_json": b'{"cells": [', "broken_not_utf8": b"\xff\xfe\x00garbage",
                             "broken_not_a_notebook": b'{"hello": "world"}'}.items():
        (folder / student / AID).mkdir(parents=True)
        (folder / student / AID / f"{AID}.ipynb").write_bytes(content)
    (folder / "broken_missing" / AID).mkdir(parents=True)
    (folder / "broken_missing" / AID / "answers.txt").write_text("I forgot the notebook")

