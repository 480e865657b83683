def export_and_reload(model, example_input, path, dynamic_batch=False):
    """Wrong (clause 2, the model's mode): puts the model 'back' in training mode afterwards, also when it
    came in eval mode."""
    model.eval()
    try:
        shapes = ({0: torch.export.Dim("batch")},) if dynamic_batch else None
        program = torch.export.export(model, (example_input,), dynamic_shapes=shapes)
    finally:
        model.train()
    torch.export.save(program, path)
    return torch.export.load(path).module()
