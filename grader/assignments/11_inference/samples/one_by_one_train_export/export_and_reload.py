def export_and_reload(model, example_input, path, dynamic_batch=False):
    """Wrong: exports the model in whatever mode it came in (training mode bakes Dropout and batch
    statistics into the program)."""
    shapes = ({0: torch.export.Dim("batch")},) if dynamic_batch else None
    program = torch.export.export(model, (example_input,), dynamic_shapes=shapes)
    torch.export.save(program, path)
    return torch.export.load(path).module()
