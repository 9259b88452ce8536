#!/usr/bin/env python3
"""PyTorch baselines for hipgo's sampler benchmark, run in the same call on
the same GPU as tools/samplerbench, and the copy bandwidth that sets the
floor. Prints one JSON object per line.

Every op is timed the same way as hipgo's: K back-to-back calls over R
rotating inputs, CUDA events around the block, median of 5 blocks: the cost
per call a caller sees, launch overhead included.

Logits are N(0, 5^2) (peaked like a language model's), the same
distribution samplerbench draws.
"""
import json
import sys

import torch

SHAPES_B = [1, 8, 64, 256, 512]
SHAPES_V = [32000, 128256, 151936, 262144]
SIGMA = 5.0


def timed(fn, inputs, k):
    for i in range(3):
        fn(inputs[i % len(inputs)])
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for i in range(k):
            fn(inputs[i % len(inputs)])
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) * 1e3 / k)  # microseconds
    times.sort()
    return times[len(times) // 2]


def multinomial(l):
    return torch.multinomial(torch.softmax(l, -1), 1)


def exp_race(l):
    p = torch.softmax(l, -1)
    return (p / torch.empty_like(p).exponential_(1)).argmax(-1)


def _top_p_draw(sp, si, p):
    cs = sp.cumsum(-1)
    sp = sp.masked_fill((cs - sp) > p, 0.0)
    return si.gather(-1, torch.multinomial(sp, 1))


def sort_top_p(l, p=0.9):
    sp, si = torch.softmax(l, -1).sort(-1, descending=True)
    return _top_p_draw(sp, si, p)


def topk_top_p(l, k=40, p=0.9):
    v, i = l.topk(k, -1)
    sp = torch.softmax(v, -1)  # topk returns them sorted, largest first
    return _top_p_draw(sp, i, p)


def min_p(l, m=0.05):
    pr = torch.softmax(l, -1)
    pr = pr.masked_fill(pr < m * pr.max(-1, keepdim=True).values, 0.0)
    return torch.multinomial(pr, 1)


OPS = {
    "torch_multinomial": multinomial,
    "torch_exp_race": exp_race,
    "torch_sort_top_p": sort_top_p,
    "torch_topk_top_p": topk_top_p,
    "torch_min_p": min_p,
}


def copy_bandwidth():
    n = 1 << 30  # 4 GiB of float32 each way
    x = torch.empty(n, dtype=torch.float32, device="cuda").uniform_()
    y = torch.empty_like(x)
    y.copy_(x)
    torch.cuda.synchronize()
    best = 0.0
    for _ in range(5):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        y.copy_(x)
        b.record()
        torch.cuda.synchronize()
        best = max(best, 2 * n * 4 / (a.elapsed_time(b) * 1e-3))
    del x, y
    torch.cuda.empty_cache()
    return best


def main():
    only = set(sys.argv[1].split(",")) if len(sys.argv) > 1 else None
    torch.manual_seed(0)
    print(json.dumps({"impl": "torch", "op": "copy_bandwidth", "bytes_per_s": copy_bandwidth(),
                      "gpu": torch.cuda.get_device_name(), "torch": torch.__version__}), flush=True)
    for b in SHAPES_B:
        for v in SHAPES_V:
            r = max(2, min(8, (1 << 28) // (b * v * 4)))  # rotate inputs past the L2 where they fit
            inputs = [torch.randn(b, v, device="cuda") * SIGMA for _ in range(r)]
            k = 50 if b * v >= 1 << 24 else 200
            for name, fn in OPS.items():
                if only and name not in only:
                    continue
                us = timed(fn, inputs, k)
                print(json.dumps({"impl": "torch", "op": name, "B": b, "V": v, "us": round(us, 2)}), flush=True)
            del inputs
            torch.cuda.empty_cache()


if __name__ == "__main__":
    sys.exit(main())
