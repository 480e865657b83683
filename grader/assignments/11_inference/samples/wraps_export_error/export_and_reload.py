def export_and_reload(model, example_input, path, dynamic_batch=False):
    """Wrong (clause 2, let export's error reach the caller): replaces the error torch.export.export raises
    with one of its own, which hides what went wrong."""
    was_training = model.training
    model.eval()
    try:
        shapes = ({0: torch.export.Dim("batch")},) if dynamic_batch else None
        program = torch.export.export(model, (example_input,), dynamic_shapes=shapes)
    except Exception:
        raise ValueError("export failed")
    finally:
        model.train(was_training)
    torch.export.save(program, path)
    return torch.export.load(path).module()
