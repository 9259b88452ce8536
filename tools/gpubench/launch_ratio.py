#!/usr/bin/env python3
"""Reads the launch section's log (C JSON lines and Go benchmark lines, several
rounds) and prints the Go/C launch-overhead ratios from the medians."""
import json
import re
import statistics
import sys

c_launch, c_record, c_batch, go = [], [], [], {}
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("{"):
        d = json.loads(line)
        c_launch.append(d["launch_ns_median"])
        c_record.append(d["launch_record_ns_median"])
        c_batch.append(d["launch_batched_ns_median"])
        continue
    m = re.match(r"^(Benchmark\S+?)(-\d+)?\s+\d+\s+([\d.]+) ns/op", line)
    if m:
        go.setdefault(m.group(1), []).append(float(m.group(3)))

if not c_launch:
    sys.exit("launch_ratio: no C results")
c = statistics.median(c_launch)
cr = statistics.median(c_record)
cb = statistics.median(c_batch)
print(f"C loop: cuLaunchKernel {c:.0f} ns/launch; batches of 256 {cb:.0f} ns/launch; with cuEventRecord {cr:.0f} ns/pair (median of {len(c_launch)} runs)")
for name, vals in sorted(go.items()):
    v = statistics.median(vals)
    if "Record" in name:
        base, label = cr, "C launch+record"
    elif "Batched" in name:
        base, label = cb, "C batched launch"
    else:
        base, label = c, "C launch"
    print(f"{name}: {v:.0f} ns/op, {v / base:.2f}x {label}")
