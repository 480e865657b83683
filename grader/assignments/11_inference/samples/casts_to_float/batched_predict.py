def batched_predict(model, requests, max_batch):
    """Wrong (clause 2, the dtype): casts every batch to float32 'because models take float32', so a
    bfloat16 or float64 model gets the wrong dtype."""
    was_training = model.training
    model.eval()
    outputs = []
    try:
        with torch.inference_mode():
            for start in range(0, len(requests), max_batch):
                batch = torch.stack(requests[start:start + max_batch]).float()
                outputs.extend(model(batch).unbind(0))
    finally:
        model.train(was_training)
    return outputs
