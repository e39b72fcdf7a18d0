// Tier-3 parity with llama.cpp for Gemma 2/3 and the MoEs (Qwen3-MoE, Mixtral): see test-utils/parity.ts.
import { parityCase, quietMlp } from './test-utils/parity.ts';

// Small caps so the tanh bends the tiny model's scores and logits (the released 50 and 30 would be near-linear).
parityCase({ arch: 'gemma2', opts: { slidingWindow: 4, attnSoftcap: 1.5, finalSoftcap: 3 }, tweak: quietMlp });
// A global layer every 2 (layer 0 local, layer 1 global), as llama.cpp's sliding_window_pattern reads it back.
parityCase({ arch: 'gemma3', opts: { slidingWindow: 4, swaPattern: 2 }, tweak: quietMlp });
// Routing on llama.cpp's side is its own top-k (ggml_argsort_top_k) over the same softmax.
parityCase({ arch: 'qwen3moe', opts: { experts: 4, topK: 2 } });
parityCase({ arch: 'mixtral', opts: { experts: 4, topK: 2 } });
