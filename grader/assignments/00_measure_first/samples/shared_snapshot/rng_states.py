_SNAPSHOT = {}


def save_rng_states():
    """Wrong: every call updates and returns the same dict, so a new snapshot overwrites the old one."""
    _SNAPSHOT["random"] = random.getstate()
    _SNAPSHOT["numpy"] = np.random.get_state()
    _SNAPSHOT["torch"] = torch.get_rng_state()
    _SNAPSHOT["cuda"] = torch.cuda.get_rng_state_all()
    return _SNAPSHOT


def restore_rng_states(states):
    random.setstate(states["random"])
    np.random.set_state(states["numpy"])
    torch.set_rng_state(states["torch"])
    torch.cuda.set_rng_state_all(states["cuda"])
