def to_device_batch(batch, device, non_blocking=True):
    """Correct, in another style: structural pattern matching, the device parsed once, Tensor.cuda for
    a GPU, and a tensor already on the device returned as it is."""
    device = torch.device(device)

    def move(obj):
        match obj:
            case torch.Tensor() if obj.device == device:
                return obj
            case torch.Tensor() if device.type == "cuda":
                return obj.cuda(device, non_blocking=non_blocking)
            case torch.Tensor():
                return obj.to(device, non_blocking=non_blocking)
            case dict():
                return dict((key, move(value)) for key, value in obj.items())
            case tuple() if hasattr(obj, "_fields"):
                return obj._replace(**{name: move(getattr(obj, name)) for name in obj._fields})
            case list() | tuple():
                return type(obj)(map(move, obj))
            case _:
                return obj

    return move(batch)
