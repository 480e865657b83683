import torch


def segment_indices(num_frames, num_segments, train, generator=None):
    if min(num_frames, num_segments) <= 0:
        raise ValueError("num_frames and num_segments must be positive")
    picks = []
    for k in range(num_segments):
        lo = k * num_frames // num_segments
        hi = (k + 1) * num_frames // num_segments
        if num_frames < num_segments:
            picks.append(lo)
        elif train:
            picks.append(int(torch.randint(lo, hi, (1,), generator=generator)))
        else:
            picks.append(lo + (hi - lo) // 2)
    return torch.tensor(picks, dtype=torch.int64)
