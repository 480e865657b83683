import math


@torch.inference_mode()
def batched_predict(model, requests, max_batch):
    """Correct, in another style: the decorator, a count of batches, torch.cat of the rows."""
    mode = model.training
    model.train(False)
    try:
        answers = []
        for k in range(math.ceil(len(requests) / max_batch)):
            chunk = requests[k * max_batch:(k + 1) * max_batch]
            rows = torch.cat([r.reshape(1, -1) for r in chunk], dim=0)
            answers += [row for row in model(rows)]
        return answers
    finally:
        model.train(mode)
