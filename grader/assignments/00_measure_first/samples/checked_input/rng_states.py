import copy as _copy


def save_rng_states():
    """Correct, in another style: getters by generator object and device index, the whole snapshot
    deep-copied, NumPy's state as a dict, the GPUs' states under "gpus" (an empty list without a GPU)."""
    gpus = range(torch.cuda.device_count()) if torch.cuda.is_available() else range(0)
    snapshot = {"python": random.getstate(), "numpy": np.random.get_state(legacy=False),
                "cpu": torch.random.default_generator.get_state(),
                "gpus": [torch.cuda.get_rng_state(d) for d in gpus]}
    return _copy.deepcopy(snapshot)


def restore_rng_states(states):
    random.setstate(states["python"])
    np.random.set_state(states["numpy"])
    torch.random.default_generator.set_state(states["cpu"])
    for d, state in enumerate(states["gpus"]):
        torch.cuda.set_rng_state(state, d)
