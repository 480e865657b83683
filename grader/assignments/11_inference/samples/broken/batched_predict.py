def batched_predict(model, requests, max_batch)
    return [model(r) for r in requests]
