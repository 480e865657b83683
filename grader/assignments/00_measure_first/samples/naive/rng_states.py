def save_rng_states():
    """Wrong: torch's CPU generator only; Python's, NumPy's and the GPUs' generators are forgotten."""
    return {"torch": torch.get_rng_state()}


def restore_rng_states(states):
    torch.set_rng_state(states["torch"])
