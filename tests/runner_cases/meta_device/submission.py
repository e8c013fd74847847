import torch


def add(x, y):
    return torch.empty(x.shape, device="meta")
