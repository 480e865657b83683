def pairwise_sq_distances(a, b):
    """Wrong in float64 far from the origin: the matmul identity computed in float64 and cast back.
    That rescues float32 inputs, but float64 inputs get no extra precision and are not centred."""
    a64, b64 = a.double(), b.double()
    sq = a64.pow(2).sum(-1, keepdim=True) + b64.pow(2).sum(-1).unsqueeze(-2) - 2 * (a64 @ b64.mT)
    return sq.clamp_min(0).to(a.dtype)
