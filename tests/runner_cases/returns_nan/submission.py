import torch


def add(x, y):
    return torch.full_like(x, float("nan"))
