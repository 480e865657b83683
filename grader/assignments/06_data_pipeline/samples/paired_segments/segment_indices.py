def segment_indices(num_frames, num_segments, train, generator=None):
    """Wrong (independence): two random numbers per call, segment k uses number k % 2, so segments
    0, 2, 4, ... move together (neighbours look independent)."""
    if num_frames < 1 or num_segments < 1:
        raise ValueError("num_frames and num_segments must be at least 1")
    b = torch.arange(num_segments + 1) * num_frames // num_segments
    if num_frames < num_segments:
        return b[:-1].clone()
    width = b[1:] - b[:-1]
    if not train:
        return b[:-1] + width // 2
    u = torch.rand(2, generator=generator, dtype=torch.float64)
    r = u[torch.arange(num_segments) % 2]
    return b[:-1] + (r * width).long().clamp(max=width - 1)
