def save_rng_states()
    return {"random": random.getstate()}


def restore_rng_states(states):
    random.setstate(states["random"])
