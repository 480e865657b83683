import copy


def export_and_reload(model, example_input, path, dynamic_batch=False):
    """Wrong (clause 4, through the file): saves the program, then returns the one still in memory
    (exported from an eval-mode copy, so it does not depend on the model): nothing is read back."""
    frozen = copy.deepcopy(model).eval()
    shapes = ({0: torch.export.Dim("batch")},) if dynamic_batch else None
    program = torch.export.export(frozen, (example_input,), dynamic_shapes=shapes)
    torch.export.save(program, path)
    return program.module()
