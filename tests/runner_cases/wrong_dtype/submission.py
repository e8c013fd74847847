import torch


def add(x, y):
    return (x + y).to(torch.float64)
