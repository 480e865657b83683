def seed_all(seed, deterministic=False):
    """Wrong: seeds torch only, ignores the other generators and the flags."""
    torch.manual_seed(seed)
