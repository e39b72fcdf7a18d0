// Rein's own model server: the model's GGUF in llama.cpp (node-llama-cpp) with the active adapter's GGUF LoRA,
// behind an OpenAI-compatible API on loopback (`POST /v1/chat/completions`, streaming or not, with logprobs;
// `GET /v1/models`). The chat is rendered with the HF chat template and tokenised with the HF tokenizer, the same
// code the trainer uses, so an on-policy turn's prompt is exactly what the trainer rebuilds. Sampling is done here
// from llama.cpp's raw logits: the reported logprob of a token is log softmax(logits) at temperature 1, the policy's
// own probability (μ), whatever temperature or top_p picked it; `top_logprobs` (0-20, as OpenAI) lists the k most
// probable tokens of that same distribution at each position, with their ids. The active version is read from the
// store on every request (and contexts of versions no longer active are released on `adapterChanged`), so a new
// version or a rollback applies to the next request without a restart. Each reply names its version in
// x-rein-adapter-version.
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { getLlama, LlamaLogLevel } from 'node-llama-cpp';
import type { ControlledEvaluateInputItem, LlamaContext, LlamaModel, Token } from 'node-llama-cpp';
import { NotAvailableError } from '../../common/errors.ts';
import { Rng } from '../../common/engine/rng.ts';
import type { ReinCore } from '../core/core.ts';
import { hfToGguf } from '../engine/gguf/convert.ts';
import { loadTokenizer } from '../engine/tokenizer.ts';
import type { ReinTokenizer } from '../engine/tokenizer.ts';
import { readJsonBody } from '../server/body.ts';
import { checkHostAndOrigin, checkToken } from '../server/guards.ts';
import { modelFolder } from '../training/versions.ts';
import { resolveModelDir } from '../training/model.ts';
import { ChatRequest } from './openai.ts';
import { activeModelId } from './producer.ts';
import { ensureGgufLora } from './publish.ts';
import { ADAPTER_VERSION_HEADER } from './proxy.ts';

export interface ModelServerOptions {
  core: ReinCore;
  token: string;
  port: number;
  /** The base GGUF; default the `serving.modelGguf` setting, else converted once from the HF weights. */
  gguf?: string;
  contextSize?: number;
  threads?: number;
  /** F32 KV cache (llama.cpp's default is F16): exact logprobs for parity checks, twice the cache memory. */
  exactKv?: boolean;
  log?: (line: string) => void;
}

export interface ModelServer {
  readonly port: number;
  /** `http://127.0.0.1:PORT/v1` */
  readonly url: string;
  readonly gguf: string;
  close(): Promise<void>;
}

/** The base GGUF to serve: the setting, or HF → GGUF (f16) converted once into the Rein home. */
export function baseGguf(core: ReinCore, log: (line: string) => void): { gguf: string; hfDir: string | null } {
  const s = core.settings();
  const modelId = activeModelId(core);
  let hfDir: string | null;
  try {
    hfDir = resolveModelDir(core.store, modelId);
  } catch {
    hfDir = null;
  }
  const set = s['serving.modelGguf'];
  if (set !== null) {
    if (!existsSync(set)) throw new NotAvailableError('serve-model', `serving.modelGguf ${set} does not exist`);
    if (hfDir === null) log(`rein serve-model: serving ${set} without adapters: training needs the matching HF weights (config.json + safetensors); register them with model.active`);
    return { gguf: set, hfDir };
  }
  if (hfDir === null) throw new NotAvailableError('serve-model', 'no model to serve: set model.active to an HF model directory, or serving.modelGguf to a GGUF file');
  const out = path.join(core.home.modelsDir, modelFolder(modelId), 'model-f16.gguf');
  if (!existsSync(out)) {
    mkdirSync(path.dirname(out), { recursive: true });
    log(`rein serve-model: converting ${hfDir} to ${out} (once)`);
    const tmp = `${out}.tmp-${process.pid}`;
    try {
      hfToGguf(hfDir, tmp, { f16: true });
      renameSync(tmp, out);
    } finally {
      rmSync(tmp, { force: true });
    }
  }
  return { gguf: out, hfDir };
}

/** log softmax(logits) over the vocabulary (ids absent from the map get -Infinity). One pass over the map, and the
 * sum of exponentials taken in the map's order, as it always was, so the reported numbers do not move by a bit. */
export function logSoftmax(logits: Map<Token, number>, V: number): Float64Array {
  const n = logits.size;
  const out = new Float64Array(V).fill(-Infinity);
  let mx = -Infinity;
  let j = 0;
  let inOrder = n <= V;
  logits.forEach((v, t) => {
    if (t !== j++) inOrder = false;
    out[t] = v;
    mx = Math.max(mx, v);
  });
  if (inOrder) {
    // Ids 0..n-1 in that order (what llama.cpp gives): the map's order is the row's.
    let z = 0;
    for (let i = 0; i < n; i++) z += Math.exp(out[i]! - mx);
    const lz = mx + Math.log(z);
    for (let i = 0; i < n; i++) out[i] = out[i]! - lz;
    return out;
  }
  let z = 0;
  for (const v of logits.values()) z += Math.exp(v - mx);
  const lz = mx + Math.log(z);
  for (const [t, v] of logits) out[t] = v - lz;
  return out;
}

/** The k most probable tokens of a log-softmax row, most probable first (ties: the lower id first). */
export function topK(logp: Float64Array, k: number): { id: number; logprob: number }[] {
  const top: { id: number; logprob: number }[] = [];
  for (let i = 0; i < logp.length; i++) {
    const v = logp[i]!;
    if (top.length === k && !(v > top[k - 1]!.logprob)) continue;
    let j = top.length < k ? top.length : k - 1;
    while (j > 0 && top[j - 1]!.logprob < v) j--;
    top.splice(j, 0, { id: i, logprob: v });
    if (top.length > k) top.pop();
  }
  return top;
}

/** OpenAI's limit on top_logprobs. */
const MAX_TOP_LOGPROBS = 20;

// pick()'s order is "most probable first, ties by the lower id", and the top-p mass and the draw add and subtract the
// probabilities in that order, so the result depends on that order bit for bit. Sorting the whole vocabulary (152k
// ids for Qwen) with a comparator cost ~100 ms a token; instead the probabilities (all in [0, 1]) are bucketed by the
// high 32 bits of their IEEE-754 pattern, which order them as their values do (at most 65,536 buckets over the range
// the row spans down to 2^-54, then one for everything smaller), and a bucket is sorted only when a walk reaches it.
// The walks need values only (equal values are interchangeable in a sum); the one sampled position is mapped back to
// its id at the end: the n-th id, in id order, among those with its value.
const MAX_BUCKETS = 1 << 16;
/** The high word of 1, and how far under it the high word of 2^-54 is: the mass walk never needs a smaller value. */
const ONE_HI = 0x3ff00000;
const CUT = 54 << 20;
/** Adding a value below mass·2^-54 leaves the mass as it is (under half its ulp), and so does every smaller one. */
const NO_CHANGE = 2 ** -54;
const HI_WORD = new Uint8Array(new Float64Array([1]).buffer)[7] === 0x3f ? 1 : 0;
const word = new Float64Array(1);
const wordHalves = new Uint32Array(word.buffer);
let probs = new Float64Array(0);
let probHalves = new Uint32Array(0);
/** The probabilities, negated (an ascending sort is "most probable first"), grouped by bucket. */
let negSorted = new Float64Array(0);
let bucketOf = new Int32Array(0);
const bucketStart = new Int32Array(MAX_BUCKETS + 2);

/** Sorts bucket b of negSorted in place and returns where it ends. */
function sortBucket(b: number): number {
  const s = bucketStart[b]!;
  const e = bucketStart[b + 1]!;
  if (e - s > 32) negSorted.subarray(s, e).sort();
  else {
    for (let i = s + 1; i < e; i++) {
      const v = negSorted[i]!;
      let j = i;
      for (; j > s && negSorted[j - 1]! > v; j--) negSorted[j] = negSorted[j - 1]!;
      negSorted[j] = v;
    }
  }
  return e;
}

/** What is wrong with a chat request's sampling fields, by OpenAI's ranges, or null. */
function requestProblem(chat: ChatRequest): { message: string; param: string } | null {
  const k = chat.top_logprobs ?? 0;
  if (k < 0 || k > MAX_TOP_LOGPROBS) return { message: `top_logprobs must be an integer from 0 to ${MAX_TOP_LOGPROBS}, got ${k}`, param: 'top_logprobs' };
  for (const [name, v, hi] of [['temperature', chat.temperature, 2], ['top_p', chat.top_p, 1]] as const) {
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > hi) return { message: `${name} must be a number from 0 to ${hi}, got ${JSON.stringify(v)}`, param: name };
  }
  return null;
}

/**
 * Greedy at temperature 0 or top_p 0 (the smallest set holding a share 0 of the mass is the top token); else
 * softmax(logp/temperature) cut to the smallest top-p set (Holtzman et al. 2020).
 */
export function pick(logp: Float64Array, temperature: number, topP: number, rng: Rng): number {
  const V = logp.length;
  let best = 0;
  for (let i = 1; i < V; i++) if (logp[i]! > logp[best]!) best = i;
  if (temperature <= 0 || topP <= 0) return best;
  if (probs.length !== V) {
    probs = new Float64Array(V);
    probHalves = new Uint32Array(probs.buffer);
    negSorted = new Float64Array(V);
    bucketOf = new Int32Array(V);
  }
  const p = probs;
  const top = logp[best]!;
  let z = 0;
  let least = 1;
  for (let i = 0; i < V; i++) {
    const x = Math.exp((logp[i]! - top) / temperature);
    z += p[i] = x;
    if (x < least) least = x;
  }
  const target = topP * z;
  if (!(0 < target)) {
    // NaN logits: llama.cpp handed over something that is not a distribution.
    throw new Error('the model returned logits that are not numbers (NaN)');
  }
  // Every p is in [0, 1] now (a NaN would have made z NaN) and p[best] = 1. Bucket b holds the d = hi(1) - hi(p)
  // in [b·2^shift, (b+1)·2^shift) for d < span; the last bucket the rest.
  word[0] = least;
  const span = Math.min(CUT, ONE_HI - wordHalves[HI_WORD]! + 1);
  const buckets = Math.min(MAX_BUCKETS, V);
  let shift = 0;
  while ((span - 1) >>> shift >= buckets) shift++;
  const last = ((span - 1) >>> shift) + 1;
  bucketStart.fill(0, 0, last + 2);
  for (let i = 0; i < V; i++) {
    const d = ONE_HI - probHalves[2 * i + HI_WORD]!;
    const b = d < span ? d >>> shift : last;
    bucketOf[i] = b;
    bucketStart[b]!++;
  }
  for (let b = 1; b <= last; b++) bucketStart[b]! += bucketStart[b - 1]!;
  // bucketStart[b] is where bucket b ends; filled from its end down, it is where the bucket starts.
  for (let i = V - 1; i >= 0; i--) negSorted[--bucketStart[bucketOf[i]!]!] = -p[i]!;
  bucketStart[last + 1] = V;
  const S = negSorted;
  let sorted = 0; // positions below this are in their final order
  let next = 0; // the next bucket to sort
  // The smallest prefix of that order whose mass reaches topP·z (all of it when it never does).
  let mass = 0;
  let k = 0;
  while (k < V && mass < target) {
    while (k >= sorted) sorted = sortBucket(next++);
    const v = -S[k]!;
    if (v < mass * NO_CHANGE) {
      k = V;
      break;
    }
    mass += v;
    k++;
  }
  let u = rng.uniform() * mass;
  let at = k - 1;
  for (let i = 0; i < k; i++) {
    while (i >= sorted) sorted = sortBucket(next++);
    u -= -S[i]!;
    if (u <= 0) {
      at = i;
      break;
    }
  }
  // The id at that position: the n-th with its value, in id order, n counted from the value's first position.
  const n = S[at]!;
  let first = at;
  while (first > 0 && S[first - 1] === n) first--;
  let skip = at - first;
  const v = -n;
  for (let i = 0; i < V; i++) if (p[i] === v && skip-- === 0) return i;
  throw new Error('pick: the sampled probability is not in the row');
}

const utf8 = new TextEncoder();

export async function startModelServer(opts: ModelServerOptions): Promise<ModelServer> {
  const { core } = opts;
  const log = opts.log ?? ((line: string) => process.stderr.write(line + '\n'));
  const { gguf, hfDir } = opts.gguf === undefined ? baseGguf(core, log) : { gguf: opts.gguf, hfDir: (() => { try { return resolveModelDir(core.store, activeModelId(core)); } catch { return null; } })() };
  if (hfDir === null) throw new NotAvailableError('serve-model', 'the HF tokenizer and chat template are needed (model.active): Rein renders chats the way the trainer does');
  const tok: ReinTokenizer = loadTokenizer(hfDir);
  const contextSize = opts.contextSize ?? core.settings()['serving.contextSize'];
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, progressLogs: false });
  const model: LlamaModel = await llama.loadModel({ modelPath: gguf, gpuLayers: 0 });
  const contexts = new Map<number, LlamaContext>();
  const modelName = path.basename(gguf, '.gguf');
  let queue: Promise<unknown> = Promise.resolve();

  async function contextFor(version: number, loraPath: string | null): Promise<LlamaContext> {
    let ctx = contexts.get(version);
    if (ctx === undefined) {
      ctx = await model.createContext({
        contextSize,
        sequences: 1,
        threads: opts.threads,
        flashAttention: false,
        ...(opts.exactKv === true ? { experimentalKvCacheKeyType: 'F32' as const, experimentalKvCacheValueType: 'F32' as const } : {}),
        lora: loraPath === null ? undefined : { adapters: [{ filePath: loraPath, scale: 1 }] },
      });
      contexts.set(version, ctx);
    }
    return ctx;
  }

  const dispose = core.on('adapterChanged', () => {
    const active = core.store.activeAdapter(activeModelId(core))?.version ?? 0;
    for (const [v, ctx] of contexts) if (v !== active) {
      contexts.delete(v);
      void queue.then(() => ctx.dispose());
    }
  });

  interface Gen {
    version: number;
    ids: number[];
    logprobs: number[];
    /** Per position, the `top` most probable tokens (empty lists when none were asked for). */
    tops: Top[];
    finish: 'stop' | 'length';
  }
  type Top = { id: number; logprob: number }[];

  async function generate(chat: ChatRequest, top: number, onToken: (id: number, lp: number, tops: Top) => void): Promise<Gen> {
    const modelId = activeModelId(core);
    const active = core.store.activeAdapter(modelId);
    const version = active?.version ?? 0;
    const lora = active === null ? null : ensureGgufLora(active, hfDir!);
    const messages = chat.messages.map((m) => ({ role: m.role, content: typeof m.content === 'string' ? m.content : (m.content ?? []).map((p) => p.text ?? '').join('') }));
    const prompt = tok.encodeChat(messages, { addGenerationPrompt: true });
    const maxTokens = Math.min(Number((chat as { max_tokens?: unknown }).max_tokens ?? (chat as { max_completion_tokens?: unknown }).max_completion_tokens ?? 256) || 256, contextSize - prompt.length);
    if (maxTokens <= 0) throw new NotAvailableError('chat', `the prompt has ${prompt.length} tokens, more than the context of ${contextSize} (serving.contextSize)`);
    const temperature = typeof chat.temperature === 'number' ? chat.temperature : 1;
    const topP = typeof chat.top_p === 'number' ? chat.top_p : 1;
    const rng = new Rng(typeof chat.seed === 'number' ? chat.seed : Date.now());
    const ctx = await contextFor(version, lora);
    const seq = ctx.getSequence();
    try {
      const ids: number[] = [];
      const logprobs: number[] = [];
      const tops: Top[] = [];
      let input: ControlledEvaluateInputItem[] = prompt.map((t, i) => (i === prompt.length - 1 ? [t as Token, { generateNext: { logits: true } }] : (t as Token)));
      for (;;) {
        const out = await seq.controlledEvaluate(input);
        const logits = out[input.length - 1]?.next.logits;
        if (logits === undefined) throw new Error('llama.cpp returned no logits');
        const logp = logSoftmax(logits, logits.size);
        const id = pick(logp, temperature, topP, rng);
        const alts = top > 0 ? topK(logp, top) : [];
        ids.push(id);
        logprobs.push(logp[id]!);
        tops.push(alts);
        onToken(id, logp[id]!, alts);
        if (tok.eosIds.includes(id)) return { version, ids, logprobs, tops, finish: 'stop' };
        if (ids.length >= maxTokens) return { version, ids, logprobs, tops, finish: 'length' };
        input = [[id as Token, { generateNext: { logits: true } }]];
      }
    } finally {
      seq.dispose();
    }
  }

  /** The reply text of ids so far: the end-of-turn token is not text, and a split UTF-8 character waits for its rest. */
  const textOf = (ids: readonly number[]): string => tok.decode(ids.filter((t) => !tok.eosIds.includes(t)));
  const one = (id: number, lp: number) => {
    const token = tok.decode([id]);
    return { id, token, logprob: lp, bytes: Array.from(utf8.encode(token)) };
  };
  const entry = (id: number, lp: number, alts: Top) => ({ ...one(id, lp), top_logprobs: alts.map((a) => one(a.id, a.logprob)) });

  async function chatCompletions(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readJsonBody(req, 8 * 1024 * 1024);
    const parsed = ChatRequest.safeParse(body);
    const problem = parsed.success ? requestProblem(parsed.data) : { message: parsed.error.issues[0]!.message };
    if (!parsed.success || problem !== null) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { ...problem, type: 'invalid_request_error' } }));
      return;
    }
    const chat = parsed.data;
    const withLp = chat.logprobs === true;
    const k = chat.top_logprobs ?? 0;
    const top = withLp ? k : 0;
    const id = `chatcmpl-rein-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
    const created = Math.floor(Date.now() / 1000);
    // One generation at a time: the context has one sequence.
    const run = queue.then(async () => {
      if (chat.stream === true) {
        let started = false;
        let emitted = '';
        const sofar: number[] = [];
        const send = (obj: unknown) => res.write(`data: ${JSON.stringify(obj)}\n\n`);
        const g = await generate(chat, top, (tid, lp, alts) => {
          sofar.push(tid);
          const full = textOf(sofar);
          const delta = full.endsWith('\uFFFD') ? '' : full.slice(emitted.length);
          emitted += delta;
          if (!started) {
            started = true;
            const version = core.store.activeAdapter(activeModelId(core))?.version ?? 0;
            res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', [ADAPTER_VERSION_HEADER]: String(version) });
          }
          send({ id, object: 'chat.completion.chunk', created, model: modelName, choices: [{ index: 0, delta: { content: delta }, logprobs: withLp ? { content: [entry(tid, lp, alts)] } : null, finish_reason: null }] });
        });
        const rest = textOf(g.ids).slice(emitted.length);
        send({ id, object: 'chat.completion.chunk', created, model: modelName, choices: [{ index: 0, delta: rest.length > 0 ? { content: rest } : {}, logprobs: null, finish_reason: g.finish }] });
        res.end('data: [DONE]\n\n');
        return;
      }
      const g = await generate(chat, top, () => {});
      const text = textOf(g.ids);
      res.writeHead(200, { 'content-type': 'application/json', [ADAPTER_VERSION_HEADER]: String(g.version) });
      res.end(
        JSON.stringify({
          id,
          object: 'chat.completion',
          created,
          model: modelName,
          choices: [{ index: 0, message: { role: 'assistant', content: text }, logprobs: withLp ? { content: g.ids.map((t, i) => entry(t, g.logprobs[i]!, g.tops[i]!)) } : null, finish_reason: g.finish }],
          usage: { completion_tokens: g.ids.length },
        }),
      );
    });
    queue = run.catch(() => {});
    await run;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const denied = checkHostAndOrigin(req.headers, port) ?? checkToken(req.headers, opts.token);
    if (denied) {
      res.writeHead(denied.code === 'forbidden' ? 403 : 401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: denied.message, type: denied.code } }));
      return;
    }
    const p = (req.url ?? '/').split('?')[0];
    if (p === '/v1/models' && req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data: [{ id: modelName, object: 'model', owned_by: 'rein' }] }));
      return;
    }
    if (p === '/v1/chat/completions' && req.method === 'POST') return chatCompletions(req, res);
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: `no route ${req.method} ${p}`, type: 'not_found' } }));
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      log(`rein model server: ${(e as Error)?.stack ?? String(e)}`);
      if (res.headersSent) res.destroy();
      else {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: (e as Error).message, type: 'internal_error' } }));
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: opts.port, exclusive: true }, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}/v1`,
    gguf,
    async close() {
      dispose();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await queue;
      for (const c of contexts.values()) await c.dispose();
      await model.dispose();
    },
  };
}
