# Correct, another style: plain Python integers for the boundaries and the middles, one torch.randint
# over [0, 2**62) per call reduced per segment (the bias of the remainder is below 2**-50).
import torch


def segment_indices(num_frames, num_segments, train, generator=None):
    if not (num_frames >= 1 and num_segments >= 1):
        raise ValueError(f"num_frames and num_segments must be at least 1, got {num_frames}, {num_segments}")
    b = [k * num_frames // num_segments for k in range(num_segments + 1)]
    if num_frames < num_segments:
        return torch.tensor(b[:-1], dtype=torch.int64)
    if not train:
        return torch.tensor([lo + (hi - lo) // 2 for lo, hi in zip(b, b[1:])], dtype=torch.int64)
    raw = torch.randint(0, 2**62, (num_segments,), generator=generator).tolist()
    return torch.tensor([lo + r % (hi - lo) for lo, hi, r in zip(b, b[1:], raw)], dtype=torch.int64)
