def batched_predict(model, requests, max_batch):
    """Wrong (clause 6, the global RNG): seeds torch's generator 'so that the answers are reproducible'
    (in eval mode they are anyway), which resets the caller's random stream."""
    torch.manual_seed(0)
    was_training = model.training
    model.eval()
    outputs = []
    try:
        with torch.inference_mode():
            for start in range(0, len(requests), max_batch):
                outputs.extend(model(torch.stack(requests[start:start + max_batch])).unbind(0))
    finally:
        model.train(was_training)
    return outputs
