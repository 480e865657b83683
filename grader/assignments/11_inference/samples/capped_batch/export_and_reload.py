def export_and_reload(model, example_input, path, dynamic_batch=False):
    """Wrong (clause 3, without bounds): the dynamic batch dimension is capped at 1024 rows."""
    was_training = model.training
    model.eval()
    try:
        shapes = ({0: torch.export.Dim("batch", min=1, max=1024)},) if dynamic_batch else None
        program = torch.export.export(model, (example_input,), dynamic_shapes=shapes)
    finally:
        model.train(was_training)
    torch.export.save(program, path)
    return torch.export.load(path).module()
