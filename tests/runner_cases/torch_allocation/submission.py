import torch


def add(x, y):
    return torch.empty(1 << 34, dtype=torch.uint8).fill_(1)  # 16 GiB
