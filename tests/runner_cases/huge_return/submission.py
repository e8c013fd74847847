import torch


def add(x, y):
    return torch.zeros(200_000_000, dtype=torch.float32)  # 800 MB back over the wire
