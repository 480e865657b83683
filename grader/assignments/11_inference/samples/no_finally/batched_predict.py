def batched_predict(model, requests, max_batch):
    """Wrong (clause 5, every path): the mode is restored after a normal return only; when the model
    raises, the exception skips the restore and the model stays in eval mode."""
    was_training = model.training
    model.eval()
    outputs = []
    with torch.inference_mode():
        for start in range(0, len(requests), max_batch):
            outputs.extend(model(torch.stack(requests[start:start + max_batch])).unbind(0))
    model.train(was_training)
    return outputs
