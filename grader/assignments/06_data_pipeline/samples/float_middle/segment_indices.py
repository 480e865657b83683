# Breaks the evaluation clause (the middle frame b[k] + (b[k+1] - b[k]) // 2): it takes the frame at the
# float centre of each segment, int((k + 0.5) * num_frames / K), as TSN's test-time sampling often does.
# The two agree for the visible sizes (50 frames, K = 8; 16 frames, K = 4), not for 10 frames, K = 3.
import torch


def segment_indices(num_frames, num_segments, train, generator=None):
    if num_frames < 1 or num_segments < 1:
        raise ValueError("need at least one frame and one segment")
    K = num_segments
    bounds = [k * num_frames // K for k in range(K + 1)]
    if num_frames < K:
        return torch.tensor(bounds[:-1], dtype=torch.int64)
    if train:
        return torch.cat([torch.randint(bounds[k], bounds[k + 1], (1,), generator=generator) for k in range(K)])
    return torch.tensor([int((k + 0.5) * num_frames / K) for k in range(K)], dtype=torch.int64)
