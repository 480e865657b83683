"""Probes for 02_tensor_toolbox (run in the sandbox; see common.py)."""


def one_hot(namespace, inputs):
    fn = lookup(namespace, "one_hot")

    def valid(labels, classes):
        arg = labels.clone()
        result = fn(arg, classes)
        return {"result": plain(result), "labels_after": plain(arg)}

    def invalid(labels, classes):
        try:
            fn(labels.clone(), classes)
        except Exception as exc:
            return {"raised": type(exc).__name__, "is_value_error": isinstance(exc, ValueError),
                    "message": str(exc)[:300]}
        return {"raised": None}

    return {
        "valid": [attempt(valid, labels, c) for labels, c in inputs["valid"]],
        "invalid": [attempt(invalid, labels, c) for labels, c in inputs["invalid"]],
        "ops": attempt(torch_ops, fn, *inputs["ops_case"]),
        "scaling": [{"lines": attempt(student_lines, fn, labels, c), "ops": attempt(torch_ops, fn, labels, c)}
                    for labels, c in inputs["scaling"]],
    }


def pairwise_sq_distances(namespace, inputs):
    fn = lookup(namespace, "pairwise_sq_distances")

    def one(a, b):
        a_arg, b_arg = a.clone(), b.clone()
        result = fn(a_arg, b_arg)
        return {"result": plain(result), "a_after": plain(a_arg), "b_after": plain(b_arg)}

    return {"cases": [attempt(one, a, b) for a, b in inputs["cases"]],
            "ops": attempt(torch_ops, fn, *inputs["cases"][3])}
