def save_rng_states():
    """Correct, in another style: one state per device index, NumPy's state as a dict."""
    cuda = {i: torch.cuda.get_rng_state(i) for i in range(torch.cuda.device_count())}
    return {"py": random.getstate(), "np": np.random.get_state(legacy=False),
            "cpu": torch.random.get_rng_state(), "cuda": cuda}


def restore_rng_states(states):
    random.setstate(states["py"])
    np.random.set_state(states["np"])
    torch.random.set_rng_state(states["cpu"])
    for index, state in states["cuda"].items():
        torch.cuda.set_rng_state(state, index)
