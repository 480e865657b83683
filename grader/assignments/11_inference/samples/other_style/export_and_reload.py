import copy

from torch.export import Dim, export, load, save


def export_and_reload(model, example_input, path, dynamic_batch=False):
    """Correct, in another style: export an eval-mode copy (the caller's model is never touched),
    Dim.DYNAMIC in a list."""
    frozen = copy.deepcopy(model).eval()
    kwargs = {"dynamic_shapes": [{0: Dim.DYNAMIC}]} if dynamic_batch else {}
    save(export(frozen, (example_input,), **kwargs), path)
    program = load(path)
    return program.module()
