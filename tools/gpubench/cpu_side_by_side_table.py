"""The table of scripts/cpu-side-by-side.sh's JSON lines: tokens/s of hipgo
and llama.cpp per file, phase and thread count, each round, and the ratio.

    python3 tools/gpubench/cpu_side_by_side_table.py FILE.jsonl
"""
import json
import sys
from collections import defaultdict


def main(path):
    got = defaultdict(list)  # (label, phase, threads, tool) -> [tokens/s per round]
    errors = set()
    for line in open(path):
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        if "error" in r:
            errors.add((r["label"], r["error"]))
            continue
        if r.get("tool") == "llama.cpp":
            phase = "decode" if r["n_gen"] > 0 else "prefill"
            got[(r["label"], phase, r["n_threads"], "llama.cpp")].append(r["avg_ts"])
        else:
            got[(r["model"], r["phase"], r["threads"], "hipgo")].append(r["tokens_per_s"])
    print("| file | phase | threads | hipgo (tokens/s, rounds) | llama.cpp | hipgo / llama.cpp |")
    print("|---|---|---|---|---|---|")
    for label, phase, t in sorted({k[:3] for k in got}):
        h, l = got[(label, phase, t, "hipgo")], got[(label, phase, t, "llama.cpp")]
        ratio = " / ".join(f"{a / b:.2f}" for a, b in zip(h, l))
        print(f"| {label} | {phase} | {t} | {' / '.join(f'{v:.0f}' for v in h) or '-'} | {' / '.join(f'{v:.0f}' for v in l)} | {ratio or '-'} |")
    for label, err in sorted(errors):
        print(f"\nhipgo could not run {label}: {err}")


if __name__ == "__main__":
    main(sys.argv[1])
