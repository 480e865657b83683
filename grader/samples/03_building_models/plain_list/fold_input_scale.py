def fold_input_scale(conv, scale):
    """Wrong: divides by the scale instead of multiplying by it."""
    folded = nn.Conv2d(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding,
                       conv.dilation, conv.groups, bias=conv.bias is not None)
    folded.load_state_dict(conv.state_dict())
    with torch.no_grad():
        folded.weight.div_(scale)
    return folded
