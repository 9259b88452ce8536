"""A decode step's kernels, per position in a layer, from ncu's kernel times.

    python3 tools/gpubench/step_breakdown.py KERNELS.tsv

The input is a TSV (batch, id, kernel, block, grid,
gpu__time_duration_ns; '#' lines are comments): every kernel of a
decodebench run under ncu, in launch order. A decode step ends with the
sampler's kernel (SAMPLER, gumbel_max_f32 by default); the steps are the
runs between two of them whose kernel count is the most common one (the
prefill's run differs). Within a step, the layers are the repeating
stretch after the embedding: the shortest period p for which the kernel
names repeat for LAYERS (default 16) layers. Prints, per batch, each layer
position's kernel, grid and mean time (over layers and steps), the layer's
sum, what lies outside the layers, and the step's total: times of kernels
run one at a time, so the sum is above a pipelined step's time.
"""
import collections
import os
import sys

SAMPLER = os.environ.get("SAMPLER", "gumbel_max_f32")
LAYERS = int(os.environ.get("LAYERS", "16"))


def read(path):
    by_batch = collections.defaultdict(list)
    with open(path) as f:
        for line in f:
            if line.startswith("#") or line.startswith("batch\t"):
                continue
            b, _, name, _, grid, ns = line.rstrip("\n").split("\t")
            by_batch[int(b)].append((name, grid, float(ns)))
    return by_batch


def steps(kernels):
    ends = [i for i, k in enumerate(kernels) if k[0] == SAMPLER]
    runs = [kernels[a + 1:b + 1] for a, b in zip(ends, ends[1:])]
    if not runs:
        raise SystemExit("no two sampler kernels: no whole decode step")
    n = collections.Counter(len(r) for r in runs).most_common(1)[0][0]
    return [r for r in runs if len(r) == n]


def period(names, start):
    for p in range(1, (len(names) - start) // LAYERS + 1):
        if all(names[start + i] == names[start + i + p] for i in range((LAYERS - 1) * p)):
            return p
    raise SystemExit(f"no period repeats {LAYERS} times after position {start}")


def main(path):
    for batch, kernels in sorted(read(path).items()):
        ss = steps(kernels)
        names = [k[0] for k in ss[0]]
        start = 1  # after the embedding
        p = period(names, start)
        end = start + LAYERS * p
        total = sum(k[2] for s in ss for k in s) / len(ss)
        print(f"batch {batch}: {len(ss)} steps of {len(names)} kernels, {total / 1e3:.1f} us a step "
              f"(kernels one at a time); a layer is {p} kernels")
        layer = 0.0
        for j in range(p):
            ts = [s[start + l * p + j][2] for s in ss for l in range(LAYERS)]
            mean = sum(ts) / len(ts)
            layer += mean
            name, grid = ss[0][start + j][0], ss[0][start + j][1]
            print(f"  {j:2d}  {name:24s} grid {grid:12s} {mean / 1e3:7.2f} us")
        rest = [(k[0], k[1], sum(s[i][2] for s in ss) / len(ss)) for i, k in enumerate(ss[0]) if i < start or i >= end]
        print(f"  layer: {layer / 1e3:.1f} us, x{LAYERS} = {LAYERS * layer / 1e3:.1f} us")
        for name, grid, t in rest:
            print(f"  outside the layers: {name:24s} grid {grid:12s} {t / 1e3:7.2f} us")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
