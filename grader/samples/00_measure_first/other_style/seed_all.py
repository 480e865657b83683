def seed_all(seed, deterministic=False):
    """Correct, in another style: a loop over the seeding functions; flags set together."""
    for seed_fn in (random.seed, np.random.seed, torch.manual_seed):
        seed_fn(seed)
    torch.backends.cudnn.deterministic = deterministic
    torch.backends.cudnn.benchmark = not deterministic and torch.backends.cudnn.benchmark
    torch.use_deterministic_algorithms(deterministic, warn_only=True)
