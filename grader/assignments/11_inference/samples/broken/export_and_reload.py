def export_and_reload(model, example_input, path, dynamic_batch=False):
    raise NotImplementedError("todo")
