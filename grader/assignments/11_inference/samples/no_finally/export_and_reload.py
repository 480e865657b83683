def export_and_reload(model, example_input, path, dynamic_batch=False):
    """Wrong (clause 2, every path): the mode is restored only when export succeeds; when it raises, the
    model stays in eval mode."""
    was_training = model.training
    model.eval()
    shapes = ({0: torch.export.Dim("batch")},) if dynamic_batch else None
    program = torch.export.export(model, (example_input,), dynamic_shapes=shapes)
    model.train(was_training)
    torch.export.save(program, path)
    return torch.export.load(path).module()
