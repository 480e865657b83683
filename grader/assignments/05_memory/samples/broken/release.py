def release(namespace, *names):
    raise RuntimeError("todo")
