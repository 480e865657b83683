# The source's TSN sampler, ported: the generator is passed on and a tensor is returned, but the
# segments are num_frames // K long (the last frames are never chosen), evaluation indices are
# floats, short videos are padded with random frames, and bad sizes are not rejected.
import torch


def segment_indices(num_frames, num_segments, train, generator=None):
    K = num_segments
    if train:
        if num_frames > K:
            frame_indices = torch.randint(high=num_frames // K, size=(K,), dtype=torch.long, generator=generator)
            frame_indices += num_frames // K * torch.arange(K)
        else:
            frame_indices = torch.randint(high=num_frames, size=(K - num_frames,), dtype=torch.long,
                                          generator=generator)
            frame_indices = torch.sort(torch.cat((torch.arange(num_frames), frame_indices)))[0]
    else:
        if num_frames > K:
            frame_indices = num_frames / K // 2
            frame_indices += num_frames // K * torch.arange(K)
        else:
            frame_indices = torch.sort(torch.cat((torch.arange(num_frames), torch.arange(K - num_frames))))[0]
    return frame_indices
