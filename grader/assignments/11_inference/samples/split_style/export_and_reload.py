import contextlib
from pathlib import Path

from torch.export import Dim


@contextlib.contextmanager
def _evaluating(model):
    mode = model.training
    model.train(False)
    try:
        yield model
    finally:
        model.train(mode)


def export_and_reload(model, example_input, path, dynamic_batch=False):
    """Correct, another style: a context manager for the mode, Dim.AUTO, save and load through open
    files."""
    dims = {"dynamic_shapes": ({0: Dim.AUTO},)} if dynamic_batch else {}
    with _evaluating(model):
        program = torch.export.export(model, args=(example_input,), **dims)
    target = Path(path)
    with target.open("wb") as f:
        torch.export.save(program, f)
    with target.open("rb") as f:
        loaded = torch.export.load(f)
    return loaded.module()
