def batched_predict(model, requests, max_batch):
    """Wrong (clause 5, grad mode as it was before): turns grad mode on on the way out, whatever it was when
    batched_predict was called (a caller under torch.no_grad() finds it on)."""
    was_training = model.training
    model.eval()
    outputs = []
    try:
        with torch.inference_mode():
            for start in range(0, len(requests), max_batch):
                outputs.extend(model(torch.stack(requests[start:start + max_batch])).unbind(0))
    finally:
        model.train(was_training)
        torch.set_grad_enabled(True)
    return outputs
