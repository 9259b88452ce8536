"""Decode and prefill speed of one random-init checkpoint, side by side on
one GPU: transformers (eager; static cache with torch.compile when it runs),
hipgo (tools/decodebench) and llama.cpp (llama-bench, llama-batched-bench)
on the same weights, against the weight-read floor measured in the same run.

    python3 decode_side_by_side.py make SHAPE DIR TOKENIZER_DIR   random weights (bf16) + tokenizer
                                                                  (TOKENIZER_DIR "-": none; decodebench and
                                                                  transformers need none, llama.cpp's converter does)
    python3 decode_side_by_side.py floor DIR                      copy bandwidth, weight bytes -> JSON line
    python3 decode_side_by_side.py hf DIR [eager|compile ...]     transformers -> JSON lines
    python3 decode_side_by_side.py llamacpp BENCH.jsonl BATCHED.txt llama-bench -o jsonl and
                                                                  llama-batched-bench output -> JSON lines
    python3 decode_side_by_side.py table FILE.jsonl ...           the markdown table of every line

SHAPE is llama1b (Llama-3.2-1B: hidden 2048, 16 layers, GQA 32/8, llama3
rope scaling, vocab 128256, tied, 2.47 GB in bf16) or smollm135m (SmolLM-135M:
hidden 576, 30 layers, GQA 9/3, vocab 49152, tied). Every tool measures the
same thing: greedy decode of NEW tokens (default 128) after a PROMPT-token
prompt (16), at batch 1 and 32, tokens/s over the batch (prefill outside the
timer); and a 512-token prefill, tokens/s. Each line is a JSON object with
"tool", "phase", "batch", "tokens_per_s".
"""
import json
import os
import sys
import time

PROMPT = int(os.environ.get("SBS_PROMPT", "16"))
NEW = int(os.environ.get("SBS_NEW", "128"))
PREFILL = int(os.environ.get("SBS_PREFILL", "512"))
BATCHES = [int(b) for b in os.environ.get("SBS_BATCHES", "1,32").split(",")]
RUNS = int(os.environ.get("SBS_RUNS", "3"))


def shape_config(shape):
    from transformers import LlamaConfig
    if shape == "llama1b":
        return LlamaConfig(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                           num_attention_heads=32, num_key_value_heads=8, head_dim=64, vocab_size=128256,
                           max_position_embeddings=131072, rms_norm_eps=1e-5, rope_theta=500000.0,
                           rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                         "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
                           tie_word_embeddings=True, bos_token_id=128000, eos_token_id=128001)
    if shape == "smollm135m":
        return LlamaConfig(hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                           num_attention_heads=9, num_key_value_heads=3, vocab_size=49152,
                           max_position_embeddings=2048, rms_norm_eps=1e-5, rope_theta=10000.0,
                           tie_word_embeddings=True, bos_token_id=0, eos_token_id=0)
    sys.exit(f"unknown shape {shape!r}: llama1b or smollm135m")


def make(shape, out, tok):
    import shutil
    import torch
    from transformers import LlamaForCausalLM
    cfg = shape_config(shape)
    torch.manual_seed(0)
    with torch.device("cuda"):  # random init on the GPU: seconds instead of a minute
        m = LlamaForCausalLM(cfg).to(torch.bfloat16)
    m.save_pretrained(out, safe_serialization=True)
    for f in ("tokenizer.json", "tokenizer_config.json") if tok != "-" else ():
        shutil.copy(os.path.join(tok, f), os.path.join(out, f))
    n = sum(p.numel() for p in m.parameters())
    print(json.dumps({"made": shape, "dir": out, "params": n, "bytes": 2 * n}))


def weight_bytes(d):
    from safetensors import safe_open
    total = 0
    for f in os.listdir(d):
        if f.endswith(".safetensors"):
            with safe_open(os.path.join(d, f), "pt") as s:
                for k in s.keys():
                    t = s.get_slice(k)
                    n = 1
                    for x in t.get_shape():
                        n *= x
                    total += n * 2  # bf16
    return total


def floor(d):
    import torch
    n = 1 << 30
    a = torch.empty(n, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    for _ in range(3):
        b.copy_(a)
    torch.cuda.synchronize()
    best = 1e9
    for _ in range(10):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        b.copy_(a)
        e.record()
        e.synchronize()
        best = min(best, s.elapsed_time(e) / 1e3)
    bw = 2 * n / best  # bytes read plus bytes written
    wb = weight_bytes(d)
    print(json.dumps({"tool": "floor", "phase": "decode", "batch": 1, "copy_GBps": bw / 1e9,
                      "weight_bytes": wb, "ms_per_step": 1e3 * wb / bw, "tokens_per_s": bw / wb}))


def hf(d, modes):
    import torch
    from transformers import AutoModelForCausalLM
    m = AutoModelForCausalLM.from_pretrained(d, dtype=torch.bfloat16).cuda().eval()
    V = m.config.vocab_size
    g = torch.Generator(device="cuda").manual_seed(1)

    def ids(B, T):
        return torch.randint(0, V, (B, T), device="cuda", generator=g)

    def med(v):
        return sorted(v)[len(v) // 2]

    def line(mode, phase, B, runs, **kw):
        print(json.dumps({"tool": "transformers-" + mode, "phase": phase, "batch": B, "prompt": kw.get("prompt", PROMPT),
                          "new": kw.get("new"), "tokens_per_s": med(runs), "runs_tokens_per_s": sorted(runs)}), flush=True)

    with torch.inference_mode():
        if "eager" in modes:
            from transformers import DynamicCache
            for B in BATCHES:
                runs = []
                for r in range(RUNS + 1):
                    x = ids(B, PROMPT)
                    cache = DynamicCache()
                    out = m(input_ids=x, past_key_values=cache, use_cache=True)
                    nxt = out.logits[:, -1].argmax(-1, keepdim=True)
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    for _ in range(NEW):
                        out = m(input_ids=nxt, past_key_values=out.past_key_values, use_cache=True)
                        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
                    nxt.cpu()
                    if r:
                        runs.append(B * NEW / (time.perf_counter() - t0))
                line("eager", "decode", B, runs, new=NEW)
            runs = []
            for r in range(RUNS + 1):
                x = ids(1, PREFILL)
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                out = m(input_ids=x, use_cache=True)
                out.logits[:, -1].argmax(-1).cpu()
                if r:
                    runs.append(PREFILL / (time.perf_counter() - t0))
            line("eager", "prefill", 1, runs, prompt=PREFILL)
        if "compile" in modes:
            # transformers' static cache through generate(), which compiles
            # the decode step itself (torch.compile, mode "reduce-overhead":
            # CUDA graphs) when the cache is static; wrapping m.forward in
            # torch.compile here instead made generate() read a CUDA-graph
            # output after the next replay had overwritten it. Its decode-step
            # time is (time(PROMPT+NEW) - time(PROMPT+1)) / (NEW-1).
            try:
                m.generation_config.cache_implementation = "static"
                for B in BATCHES:
                    def gen(n):
                        x = ids(B, PROMPT)
                        torch.cuda.synchronize()
                        t0 = time.perf_counter()
                        m.generate(x, max_new_tokens=n, min_new_tokens=n, do_sample=False, pad_token_id=0)
                        torch.cuda.synchronize()
                        return time.perf_counter() - t0
                    for _ in range(2):  # compile and warm both lengths
                        gen(NEW), gen(1)
                    if getattr(m, "_compiled_call", None) is None:
                        raise RuntimeError("generate() did not compile the decode step")
                    runs = []
                    for _ in range(RUNS):
                        runs.append(B * (NEW - 1) / (gen(NEW) - gen(1)))
                    line("compile", "decode", B, runs, new=NEW)
            except Exception as e:  # report, do not hide: the table shows it as not run
                print(json.dumps({"tool": "transformers-compile", "phase": "decode", "error": repr(e)[:500]}), flush=True)


def llamacpp(bench, batched):
    """llama-bench's JSON lines (tg: decode at batch 1 after an empty
    context; pp: prefill) and llama-batched-bench's table (S_TG t/s at each
    parallel-sequence count, after a PROMPT-token prompt each)."""
    for l in open(bench):
        l = l.strip()
        if not l.startswith("{"):
            continue
        r = json.loads(l)
        if r.get("n_gen", 0) > 0 and r.get("n_prompt", 0) == 0:
            print(json.dumps({"tool": "llama.cpp", "phase": "decode", "batch": 1, "prompt": 0, "new": r["n_gen"],
                              "tokens_per_s": r["avg_ts"], "stddev": r.get("stddev_ts"), "source": "llama-bench tg"}))
        elif r.get("n_prompt", 0) > 0 and r.get("n_gen", 0) == 0:
            print(json.dumps({"tool": "llama.cpp", "phase": "prefill", "batch": 1, "prompt": r["n_prompt"],
                              "tokens_per_s": r["avg_ts"], "stddev": r.get("stddev_ts"), "source": "llama-bench pp"}))
    head = None
    for l in open(batched):
        cells = [c.strip() for c in l.strip().strip("|").split("|")]
        if "S_TG t/s" in cells:
            head = cells
            continue
        if head and len(cells) == len(head) and cells[0].isdigit():
            row = dict(zip(head, cells))
            print(json.dumps({"tool": "llama.cpp-batched", "phase": "decode", "batch": int(row["B"]),
                              "prompt": int(row["PP"]), "new": int(row["TG"]), "tokens_per_s": float(row["S_TG t/s"]),
                              "source": "llama-batched-bench S_TG"}))


def table(files):
    rows = []
    for f in files:
        for l in open(f):
            l = l.strip()
            if l.startswith("{"):
                try:
                    rows.append(json.loads(l))
                except ValueError:
                    pass
    fl = next((r for r in rows if r.get("tool") == "floor"), None)
    print("| tool | phase | batch | tokens/s | ms/step | vs floor | vs transformers eager |")
    print("|---|---|---|---|---|---|---|")
    eager = {(r["phase"], r["batch"]): r["tokens_per_s"] for r in rows if r.get("tool") == "transformers-eager"}
    for r in rows:
        if "tokens_per_s" not in r or r.get("tool") == "floor":
            if "error" in r:
                print(f"| {r['tool']} | {r.get('phase')} | | not run: {r['error'][:80]} | | | |")
            continue
        B, tps = r["batch"], r["tokens_per_s"]
        ms = 1e3 * B / tps if r["phase"] == "decode" else 1e3 * r.get("prompt", PREFILL) / tps
        vs_floor = f"{100 * tps / B / fl['tokens_per_s']:.0f}%" if fl and r["phase"] == "decode" and B == 1 else ""
        e = eager.get((r["phase"], B))
        vs_e = f"{tps / e:.2f}x" if e else ""
        print(f"| {r['tool']} | {r['phase']} | {B} | {tps:.0f} | {ms:.3f} | {vs_floor} | {vs_e} |")
    if fl:
        print(f"\nfloor: {fl['weight_bytes'] / 1e9:.2f} GB of weights at {fl['copy_GBps']:.0f} GB/s copy = "
              f"{fl['ms_per_step']:.3f} ms a step, {fl['tokens_per_s']:.0f} tokens/s at batch 1")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    cmd = sys.argv[1]
    if cmd == "make":
        make(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "floor":
        floor(sys.argv[2])
    elif cmd == "hf":
        hf(sys.argv[2], sys.argv[3:] or ["eager", "compile"])
    elif cmd == "llamacpp":
        llamacpp(sys.argv[2], sys.argv[3])
    elif cmd == "table":
        table(sys.argv[2:])
    else:
        sys.exit(__doc__)
