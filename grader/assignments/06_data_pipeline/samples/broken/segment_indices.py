def segment_indices(num_frames, num_segments, train, generator=None):
    raise RuntimeError("not finished yet")
