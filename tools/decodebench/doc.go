// Command decodebench measures a checkpoint's prefill and greedy decode speed
// through package model's batch API, the way a server drives it: B sequences
// of the same prompt length decode together, one token each per step.
//
//	decodebench -model DIR [-device auto|cpu|gpu] [-batch 1,32] [-prompt 16] [-new 128] [-prefill 512] [-watchdog 30s]
//
// It prints one JSON line per measurement (the median of -runs runs), for
// tools/gpubench/decode_side_by_side.py to set beside transformers,
// llama.cpp and the weight-read floor. The prompts are random token ids (a
// random-init checkpoint has no tokenizer), so only speed is measured here;
// the model's tests check what it computes. -watchdog bounds each wait for
// the GPU (HIPGO_GPU_WATCHDOG overrides it), so a hung kernel ends the run
// with the runtime's *WatchdogError instead of stalling it.
package main
