#!/usr/bin/env python3
"""Train hipgo's demo model: a small Llama on the King James Bible.

Makes, in OUT_DIR, a Hugging Face checkpoint that hipgo's pure-Go forward pass
loads and `go run ./examples/generate` uses by default:
  tokenizer.json     byte-level BPE (GPT-2 pre-tokenizer), trained on the corpus
  config.json        LlamaForCausalLM, GQA, tied embeddings
  model.safetensors  bf16 weights
  train_log.json     losses, timings and sample generations

Needs torch, transformers (5.x) and tokenizers, a CUDA GPU for speed, and no
network. The corpus comes from tools/traindemo/prepare_corpus.sh.

  python3 tools/traindemo/train.py --corpus kjv.txt --out model/demo
"""

import argparse
import json
import math
import os
import random
import sys
import time

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM

EOT = "<|endoftext|>"


def log(msg):
    print(f"[traindemo {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def train_tokenizer(corpus, vocab_size):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=[EOT],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train([corpus], trainer)
    return tok


def encode_corpus(tok, corpus):
    with open(corpus, encoding="utf-8") as f:
        verses = f.read().split("\n")
    # Verses keep their newline, so the model learns line structure; books are
    # not separated (the corpus reads as one continuous text).
    ids = []
    for enc in tok.encode_batch([v + "\n" for v in verses if v]):
        ids.extend(enc.ids)
    return torch.tensor(ids, dtype=torch.long)


def batches(data, batch, seq, gen):
    hi = len(data) - seq - 1
    while True:
        starts = torch.randint(0, hi, (batch,), generator=gen)
        x = torch.stack([data[s : s + seq] for s in starts.tolist()])
        y = torch.stack([data[s + 1 : s + seq + 1] for s in starts.tolist()])
        yield x, y


@torch.no_grad()
def evaluate(model, data, seq, device, n=64):
    model.eval()
    losses = []
    for i in range(0, min(len(data) - seq - 1, n * seq), seq):
        x = data[i : i + seq].unsqueeze(0).to(device)
        y = data[i + 1 : i + seq + 1].unsqueeze(0).to(device)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=device == "cuda"):
            logits = model(input_ids=x).logits.float()
        # Targets are already shifted by one, so the loss is computed here
        # rather than by passing labels (which HF would shift again).
        losses.append(torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1)).item())
    model.train()
    return sum(losses) / max(1, len(losses))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--hidden", type=int, default=384)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--heads", type=int, default=6)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--ffn", type=int, default=1024)
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=96)
    ap.add_argument("--lr", type=float, default=1.5e-3)
    ap.add_argument("--seconds", type=float, default=90.0, help="training time budget")
    ap.add_argument("--eval-every", type=int, default=50, help="steps between held-out evaluations")
    ap.add_argument("--patience", type=int, default=10, help="stop after this many evaluations without a better held-out loss")
    ap.add_argument("--seed", type=int, default=1611)
    args = ap.parse_args()

    os.makedirs(args.out, exist_ok=True)
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    log(f"device {device} torch {torch.__version__}")

    t0 = time.time()
    tok = train_tokenizer(args.corpus, args.vocab)
    tok.save(os.path.join(args.out, "tokenizer.json"))
    eot = tok.token_to_id(EOT)
    log(f"tokenizer: vocab {tok.get_vocab_size()} in {time.time() - t0:.1f}s, {EOT}={eot}")

    data = encode_corpus(tok, args.corpus)
    n_val = len(data) // 100
    train_data, val_data = data[:-n_val], data[-n_val:]
    log(f"corpus: {len(data)} tokens ({len(train_data)} train, {n_val} held out)")

    config = LlamaConfig(
        vocab_size=tok.get_vocab_size(),
        hidden_size=args.hidden,
        intermediate_size=args.ffn,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads,
        max_position_embeddings=args.ctx,
        rope_theta=10000.0,
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,
        bos_token_id=eot,
        eos_token_id=eot,
        attention_bias=False,
        mlp_bias=False,
    )
    model = LlamaForCausalLM(config).to(device)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"model: {n_params / 1e6:.2f}M parameters")

    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)
    gen = torch.Generator().manual_seed(args.seed)
    it = batches(train_data, args.batch, args.seq, gen)
    warmup = 100
    # The schedule is by time: cosine from lr to lr/10 over the budget.
    start = time.time()
    step, best_val, best_state, history, since_best = 0, float("inf"), None, [], 0
    model.train()
    while True:
        elapsed = time.time() - start
        if elapsed >= args.seconds:
            break
        frac = elapsed / args.seconds
        lr = args.lr * min(1.0, (step + 1) / warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = next(it)
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=device == "cuda"):
            logits = model(input_ids=x).logits
        loss = torch.nn.functional.cross_entropy(logits.float().view(-1, logits.size(-1)), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        if step % args.eval_every == 0:
            val = evaluate(model, val_data, args.seq, device)
            history.append({"step": step, "seconds": round(time.time() - start, 1), "train": round(loss.item(), 4), "val": round(val, 4), "lr": lr})
            log(f"step {step} train {loss.item():.3f} val {val:.3f} lr {lr:.2e} ({time.time() - start:.0f}s)")
            if val < best_val:
                best_val, since_best = val, 0
                best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            else:
                since_best += 1
                # The corpus is about a million tokens: past the best held-out
                # loss the model only memorises it.
                if since_best >= args.patience:
                    log(f"held-out loss has not improved for {since_best} evaluations: stopping")
                    break
    val = evaluate(model, val_data, args.seq, device)
    log(f"final step {step} val {val:.3f} (best {best_val:.3f})")
    if best_state is not None and best_val < val:
        model.load_state_dict(best_state)
        val = best_val

    model.eval()
    samples = []
    for prompt in ["And God said", "In the beginning", "The LORD is my shepherd", "Blessed are"]:
        ids = torch.tensor([tok.encode(prompt).ids], device=device)
        with torch.no_grad():
            out = model.generate(ids, max_new_tokens=60, do_sample=True, temperature=0.8, top_p=0.95, pad_token_id=eot)
        text = tok.decode(out[0].tolist())
        samples.append(text)
        log(f"sample: {text!r}")

    model = model.to(torch.bfloat16).cpu()
    try:
        model.save_pretrained(args.out)  # safetensors is the default format
    except Exception as e:  # keep four minutes of training whatever the API does
        log(f"save_pretrained failed ({e!r}); writing the files directly")
        from safetensors.torch import save_file

        sd = {k: v.contiguous() for k, v in model.state_dict().items() if k != "lm_head.weight"}
        save_file(sd, os.path.join(args.out, "model.safetensors"), metadata={"format": "pt"})
        config.save_pretrained(args.out)
    # Keep only what hipgo ships: drop generation_config.json (defaults only).
    gc = os.path.join(args.out, "generation_config.json")
    if os.path.exists(gc):
        os.remove(gc)
    with open(os.path.join(args.out, "train_log.json"), "w") as f:
        json.dump(
            {
                "params": n_params,
                "steps": step,
                "tokens_seen": step * args.batch * args.seq,
                "corpus_tokens": len(data),
                "val_loss": val,
                "history": history,
                "samples": samples,
                "args": vars(args),
                "torch": torch.__version__,
                "gpu": torch.cuda.get_device_name() if device == "cuda" else "cpu",
            },
            f,
            indent=1,
        )
    log(f"saved to {args.out}: {sorted(os.listdir(args.out))} in {time.time() - t0:.0f}s total")


if __name__ == "__main__":
    sys.exit(main())
