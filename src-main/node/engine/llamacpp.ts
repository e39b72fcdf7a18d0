// The llama.cpp referee: loads a GGUF (optionally with a GGUF LoRA) through node-llama-cpp on the CPU and returns
// llama.cpp's raw logits at every position of a token sequence, and its tokenization of a text. The parity tests
// hold our engine to it. It also samples (incrementally, through the KV cache), for measuring what a model served
// by llama.cpp answers without a model server (the small LM's build report). getLlama must be called from a module file: its binary self-test forks the current script,
// which fails under `node -e` (shared/notes/TOOLCHAIN.md).
import { existsSync } from 'node:fs';
import { getLlama, LlamaLogLevel } from 'node-llama-cpp';
import type { ControlledEvaluateInputItem, Llama, LlamaContext, LlamaModel, Token } from 'node-llama-cpp';
import { BadInputError, NotAvailableError } from '../../common/errors.ts';
import { Rng } from '../../common/engine/rng.ts';
import { pick } from '../../common/engine/sampling.ts';

let llamaPromise: Promise<Llama> | null = null;

/** One CPU llama.cpp backend per process (loading the bindings is the slow part). */
function cpuLlama(): Promise<Llama> {
  llamaPromise ??= getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, progressLogs: false }).catch((e: unknown) => {
    llamaPromise = null;
    throw new NotAvailableError('llama.cpp', `node-llama-cpp could not load its prebuilt CPU binary: ${(e as Error).message}`);
  });
  return llamaPromise;
}

export interface RefereeOptions {
  /** Context window in tokens (default 128): the longest sequence `logits` accepts. */
  contextSize?: number;
  threads?: number;
}

export interface LogitsOptions {
  /** A GGUF LoRA adapter (general.type "adapter") applied at `loraScale` (default 1). */
  lora?: string;
  loraScale?: number;
}

export class LlamaCppReferee {
  readonly path: string;
  readonly contextSize: number;
  private readonly model: LlamaModel;
  private readonly threads: number | undefined;
  /** One context per adapter (node-llama-cpp binds LoRA adapters when a context is created). */
  private readonly contexts = new Map<string, LlamaContext>();

  private constructor(path: string, model: LlamaModel, opts: RefereeOptions) {
    this.path = path;
    this.model = model;
    this.contextSize = opts.contextSize ?? 128;
    this.threads = opts.threads;
  }

  /** Loads the model once; contexts (with or without a LoRA) are made on demand. */
  static async open(path: string, opts: RefereeOptions = {}): Promise<LlamaCppReferee> {
    if (!existsSync(path)) throw new BadInputError(`GGUF file ${path} does not exist`, 'path');
    const llama = await cpuLlama();
    const model = await llama.loadModel({ modelPath: path, gpuLayers: 0, useMmap: true });
    return new LlamaCppReferee(path, model, opts);
  }

  private async context(opts: LogitsOptions): Promise<LlamaContext> {
    const key = opts.lora === undefined ? '' : `${opts.lora}@${opts.loraScale ?? 1}`;
    let ctx = this.contexts.get(key);
    if (ctx === undefined) {
      if (opts.lora !== undefined && !existsSync(opts.lora)) throw new BadInputError(`GGUF LoRA ${opts.lora} does not exist`, 'lora');
      ctx = await this.model.createContext({
        contextSize: this.contextSize,
        batchSize: this.contextSize,
        sequences: 1,
        threads: this.threads,
        // Flash attention changes the order of the attention sums; off keeps the plain softmax(QKᵀ)V reference.
        flashAttention: false,
        // llama.cpp keeps K and V in F16 by default; F32 makes the cache exact, so only fp32 rounding differs.
        experimentalKvCacheKeyType: 'F32',
        experimentalKvCacheValueType: 'F32',
        lora: opts.lora === undefined ? undefined : { adapters: [{ filePath: opts.lora, scale: opts.loraScale ?? 1 }] },
      });
      this.contexts.set(key, ctx);
    }
    return ctx;
  }

  /** llama.cpp's tokenization of `text`: no BOS added; special-token text is matched only when `special`. */
  tokenize(text: string, special = false): number[] {
    return [...this.model.tokenize(text, special)];
  }

  detokenize(tokens: readonly number[]): string {
    return this.model.detokenize(tokens as readonly Token[], true);
  }

  /**
   * Raw logits after each token: row t (length V) scores the token that follows tokens[0..t]. One batch over the
   * whole sequence, from an empty KV cache.
   */
  async logits(tokens: readonly number[], opts: LogitsOptions = {}): Promise<Float32Array[]> {
    if (tokens.length === 0) throw new BadInputError('logits needs at least one token', 'tokens');
    if (tokens.length > this.contextSize) throw new BadInputError(`${tokens.length} tokens exceed the referee's context of ${this.contextSize}`, 'tokens');
    const seq = (await this.context(opts)).getSequence();
    try {
      const input: ControlledEvaluateInputItem[] = tokens.map((t) => [t as Token, { generateNext: { logits: true } }]);
      const out = await seq.controlledEvaluate(input);
      return tokens.map((_, i) => {
        const m = out[i]?.next.logits;
        if (m === undefined) throw new BadInputError(`llama.cpp returned no logits for position ${i}`, 'tokens');
        // The map holds every vocabulary id once (sorted by logit); lay it out by id.
        const row = new Float32Array(m.size);
        for (const [id, v] of m) {
          if (id >= m.size) throw new BadInputError(`llama.cpp logits map has id ${id} outside its ${m.size} entries`, 'tokens');
          row[id] = v;
        }
        return row;
      });
    } finally {
      seq.dispose();
    }
  }

  /**
   * Samples up to `maxTokens` after `prompt` (the serving loop's sampler, common/engine/sampling.ts pick, over
   * log softmax of llama.cpp's logits), stopping after a token in `stop`. Returns the sampled ids, the stop token
   * included.
   */
  async sample(prompt: readonly number[], o: { stop: readonly number[]; maxTokens: number; seed: number; temperature?: number; topP?: number }): Promise<number[]> {
    if (prompt.length === 0) throw new BadInputError('sample needs a prompt', 'prompt');
    const maxTokens = Math.min(o.maxTokens, this.contextSize - prompt.length);
    if (maxTokens <= 0) throw new BadInputError(`a ${prompt.length}-token prompt leaves no room in the referee's context of ${this.contextSize}`, 'prompt');
    const rng = new Rng(o.seed);
    const seq = (await this.context({})).getSequence();
    const ids: number[] = [];
    try {
      let input: ControlledEvaluateInputItem[] = prompt.map((t, i) => (i === prompt.length - 1 ? [t as Token, { generateNext: { logits: true } }] : (t as Token)));
      while (ids.length < maxTokens) {
        const out = await seq.controlledEvaluate(input);
        const m = out[input.length - 1]?.next.logits;
        if (m === undefined) throw new BadInputError('llama.cpp returned no logits', 'prompt');
        const logp = new Float64Array(m.size);
        let mx = -Infinity;
        for (const v of m.values()) mx = Math.max(mx, v);
        let z = 0;
        for (const v of m.values()) z += Math.exp(v - mx);
        const lz = mx + Math.log(z);
        for (const [id, v] of m) logp[id] = v - lz;
        const id = pick(logp, o.temperature ?? 1, o.topP ?? 1, rng);
        ids.push(id);
        if (o.stop.includes(id)) break;
        input = [[id as Token, { generateNext: { logits: true } }]];
      }
      return ids;
    } finally {
      seq.dispose();
    }
  }

  async close(): Promise<void> {
    for (const c of this.contexts.values()) await c.dispose();
    this.contexts.clear();
    await this.model.dispose();
  }
}
