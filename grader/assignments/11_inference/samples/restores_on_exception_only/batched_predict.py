def batched_predict(model, requests, max_batch) -> list:
    """Wrong (clause 5, 'on every path', try/finally): restores the mode in `except Exception` and after the
    loop, so a KeyboardInterrupt (or any BaseException) leaves the model in eval mode."""
    was_training = model.training
    model.eval()
    outputs = []
    try:
        with torch.inference_mode():
            for start in range(0, len(requests), max_batch):
                outputs.extend(model(torch.stack(requests[start:start + max_batch])).unbind(0))
    except Exception:
        model.train(was_training)
        raise
    model.train(was_training)
    return outputs
