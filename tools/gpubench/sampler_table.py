#!/usr/bin/env python3
"""Merges the sampler benchmark's JSON lines (PyTorch baselines from
torch_samplers.py, hipgo's from tools/samplerbench) into one markdown table
with ratios, the bandwidth floor, and the issue's goals checked."""
import json
import sys
from collections import defaultdict

rows = defaultdict(dict)
bw = None
for line in open(sys.argv[1]):
    line = line.strip()
    if not line.startswith("{"):
        continue
    d = json.loads(line)
    if d.get("op") == "copy_bandwidth":
        bw = d["bytes_per_s"]
        continue
    if "B" in d:
        rows[(d["B"], d["V"])][d["op"]] = d["us"]

if bw is None:
    sys.exit("sampler_table: no copy bandwidth line")
print(f"copy bandwidth (read+write) {bw / 1e12:.2f} TB/s; floor = B*V*4 bytes read / that rate\n")
print("| B | V | floor µs | gumbel µs | %BW | exp-race µs | ×faster | multinomial µs | top-p µs | sort top-p µs | ×faster | k40+p0.9 µs | topk+top-p µs | ×faster | min-p µs | torch min-p µs | ×faster |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
fails = []


def g(r, k):
    return r.get(k, float("nan"))


for (b, v) in sorted(rows):
    r = rows[(b, v)]
    floor = b * v * 4 / bw * 1e6
    gum, race = g(r, "gumbel"), g(r, "torch_exp_race")
    tp, stp = g(r, "rejection_top_p"), g(r, "torch_sort_top_p")
    kp, tkp = g(r, "rejection_topk_top_p"), g(r, "torch_topk_top_p")
    mp, tmp = g(r, "rejection_min_p"), g(r, "torch_min_p")
    pct = floor / gum * 100 if gum == gum else float("nan")
    print(f"| {b} | {v} | {floor:.1f} | {gum:.1f} | {pct:.0f}% | {race:.1f} | {race / gum:.2f} | {g(r, 'torch_multinomial'):.1f} | "
          f"{tp:.1f} | {stp:.1f} | {stp / tp:.2f} | {kp:.1f} | {tkp:.1f} | {tkp / kp:.2f} | {mp:.1f} | {tmp:.1f} | {tmp / mp:.2f} |")
    if gum == gum and race == race and not gum < race:
        fails.append(f"gumbel not faster than the exponential race at B={b} V={v}")
    # "16M" read the strict way, 16e6 (not 2^24): 512 x 32000 = 16.4M counts.
    if gum == gum and b * v >= 16_000_000 and not pct >= 60:
        fails.append(f"gumbel below 60% of copy bandwidth at B={b} V={v} ({pct:.0f}%)")
    if tp == tp and stp == stp and not tp < stp:
        fails.append(f"rejection top-p not faster than sort-based top-p at B={b} V={v}")

print()
if fails:
    print("goals missed:")
    for f in fails:
        print(" -", f)
else:
    print("goals met: Gumbel beats the exponential race everywhere, >= 60% of copy bandwidth at B*V >= 16M, top-p beats sort-based top-p everywhere")
