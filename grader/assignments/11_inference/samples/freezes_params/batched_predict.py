def batched_predict(model, requests, max_batch):
    """Wrong (clause 6, the model unchanged): switches requires_grad off on every parameter, 'as inference
    needs no gradients', and leaves it off, so the caller can no longer train the model."""
    model.requires_grad_(False)
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
