def batched_predict(model, requests, max_batch):
    """Wrong: no_grad instead of inference_mode, and the model is left in eval mode."""
    model.eval()
    outputs = []
    with torch.no_grad():
        for start in range(0, len(requests), max_batch):
            outputs.extend(model(torch.stack(requests[start:start + max_batch])))
    return outputs
