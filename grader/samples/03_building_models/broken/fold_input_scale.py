def fold_input_scale(conv, scale):
    raise RuntimeError("not finished")
