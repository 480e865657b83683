def batched_predict(model, requests, max_batch):
    """Wrong (clause 2, the device): fills a preallocated buffer per batch; torch.empty puts it on the
    default device, not on the requests' device (the dtype is kept)."""
    was_training = model.training
    model.eval()
    answers = []
    try:
        with torch.inference_mode():
            for start in range(0, len(requests), max_batch):
                chunk = requests[start:start + max_batch]
                batch = torch.empty(len(chunk), chunk[0].numel(), dtype=chunk[0].dtype)
                for row, request in enumerate(chunk):
                    batch[row] = request
                answers.extend(model(batch))
    finally:
        model.train(was_training)
    return answers
