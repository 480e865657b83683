def export_and_reload(model, example_input, path, dynamic_batch=False):
    """Wrong: ignores dynamic_batch (the program only takes the example's batch size)."""
    was_training = model.training
    model.eval()
    program = torch.export.export(model, (example_input,))
    model.train(was_training)
    torch.export.save(program, path)
    return torch.export.load(path).module()
