"""Kernel-launch helpers shared by the cupy benchmarks in this folder
(wg_products.py, wgs_products.py): argument types and the warpgroup
kernels' row rounding."""
import numpy as np

u32 = np.uint32


def ptr(t):
    """A tensor's device address as a u64 argument (None: a null pointer)."""
    return np.uint64(0 if t is None else t.data_ptr())


def cdiv(a, b):
    return (a + b - 1) // b


def wg_rows(rows):
    """rows rounded up to 16: R, the warpgroup image's rows per part."""
    return (rows + 15) // 16 * 16


class ColdWeights:
    """Copies of a random [n, k] bf16 weight, 160 MB or more in all (past
    the H200's 60 MB L2), handed out in turn by next(), so that a graph of
    reps calls (whole rounds of the copies) reads them from DRAM."""

    def __init__(self, n, k, device):
        import math

        import torch

        self.copies = max(2, math.ceil(160e6 / (n * k * 2)))
        self.w = [(torch.randn(n, k, device=device) / math.sqrt(k)).bfloat16() for _ in range(self.copies)]
        self.turn = 0
        self.reps = self.copies * (1 if n > 100000 else max(1, 50 // self.copies))

    def next(self):
        w = self.w[self.turn % self.copies]
        self.turn += 1
        return w
