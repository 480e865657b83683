# Breaks "random numbers are drawn only when train=True and num_frames >= K": it draws the random offsets
# first, for both modes, and then keeps them or the middles. Its frames are right in both modes, but
# evaluation advances the generator it is given, or torch's global one.
import torch


def segment_indices(num_frames, num_segments, train, generator=None):
    if num_frames < 1 or num_segments < 1:
        raise ValueError("need at least one frame and one segment")
    bounds = torch.arange(num_segments + 1) * num_frames // num_segments
    starts, lengths = bounds[:-1], bounds[1:] - bounds[:-1]
    if num_frames < num_segments:
        return starts
    random = (torch.rand(num_segments, dtype=torch.float64, generator=generator) * lengths).long()
    return starts + (random if train else lengths // 2)
