// Rein's own model server: the model's GGUF in llama.cpp (node-llama-cpp) with the active adapter's GGUF LoRA,
// behind an OpenAI-compatible API on loopback (`POST /v1/chat/completions`, streaming or not, with logprobs;
// `GET /v1/models`). The chat is rendered with the HF chat template and tokenised with the HF tokenizer, the same
// code the trainer uses, so an on-policy turn's prompt is exactly what the trainer rebuilds. Sampling is done here
// from llama.cpp's raw logits, and the reported logprob of a token is that of the distribution it was drawn from
// (pick): log softmax(logits/T) renormalised over the top-p nucleus, 0 for a greedy pick. That is the behaviour
// probability μ that MIS-PO's ratio π/μ needs (an importance weight is only unbiased against the proposal actually
// used); vLLM calls this `processed_logprobs`. `top_logprobs` (0-20, as OpenAI) lists the k most probable tokens of
// the model's own distribution (temperature 1, untruncated) at each position, with their ids: the alternatives, not
// the sampler. The active version is read from the store on every request (and contexts of versions no longer active
// are released on `adapterChanged`), so a new version or a rollback applies to the next request without a restart.
// Each reply names its version, model id, sampling and the served file's weights identity in x-rein-adapter-version,
// x-rein-model-id, x-rein-sampling and x-rein-weights.
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { getLlama, LlamaLogLevel } from 'node-llama-cpp';
import type { ControlledEvaluateInputItem, LlamaContext, LlamaModel, Token } from 'node-llama-cpp';
import { versionOfModelName } from '../../common/chat/arena.ts';
import { NotAvailableError } from '../../common/errors.ts';
import { Rng } from '../../common/engine/rng.ts';
import { pick } from '../../common/engine/sampling.ts';
import type { ReinCore } from '../core/core.ts';
import { hfToGguf } from '../engine/gguf/convert.ts';
import type { ReinTokenizer } from '../engine/tokenizer.ts';
import { readJsonBody } from '../capture-server/body.ts';
import { checkHostAndOrigin, checkToken } from '../capture-server/guards.ts';
import { modelFolder } from '../model-files/adapter-versions.ts';
import { isGgufModel, loadModelTokenizer, resolveModelDir, SET_UP_A_MODEL } from '../model-files/base-model.ts';
import { ChatRequest } from './openai.ts';
import { promptIds, toolsOf } from './prompt.ts';
import { activeModelId } from './producer.ts';
import { ensureGgufLora } from './publish.ts';
import { parseToolCalls, ToolCallStream, toolFamily } from './toolcalls.ts';
import type { StreamPiece } from './toolcalls.ts';
import { weightsId, weightsIdCacheFile } from '../model-files/weights-id.ts';
import { ADAPTER_VERSION_HEADER, MODEL_ID_HEADER, PROMPT_TOKENS_HEADER, SAMPLING_HEADER, WEIGHTS_HEADER } from './upstream.ts';

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

/**
 * The base GGUF to serve: the setting; else the model itself when it is a GGUF file (an Ollama blob, an LM Studio
 * file: the adapter was trained on these very weights, and is served on them); else HF → GGUF (f16) converted once
 * into the Rein home. `hfDir` is the model the adapters were trained on (an HF folder or that GGUF), or null.
 */
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
  if (hfDir === null) throw new NotAvailableError('serve-model', `no model to serve: ${SET_UP_A_MODEL}; or set serving.modelGguf to a GGUF file`);
  if (isGgufModel(hfDir)) return { gguf: hfDir, hfDir };
  const out = path.join(core.home.modelsDir, modelFolder(modelId), 'model-f16.gguf');
  if (!existsSync(out)) {
    mkdirSync(path.dirname(out), { recursive: true });
    log(`rein serve-model: converting ${hfDir} to ${out} (once)`);
    const tmp = `${out}.tmp-${process.pid}`;
    try {
      hfToGguf(hfDir, tmp, { type: 'f16' });
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

/** A prompt longer than the context: the client's to fix (a 400, which agents do not retry), not a server fault. */
/** A request for a version that cannot be served: the client's to fix (a 404 naming it). */
class UnknownVersionError extends Error {
  constructor(version: number, why: string) {
    super(`adapter version v${version} ${why}`);
    this.name = 'UnknownVersionError';
  }
}

class ContextLengthError extends Error {
  constructor(tokens: number, context: number) {
    // The form of Anthropic's own message, which the proxy passes on to Claude Code (agent-proxy.ts overflowOf).
    super(`prompt is too long: ${tokens} tokens > ${context} maximum (the context of the served model, serving.contextSize)`);
    this.name = 'ContextLengthError';
  }
}

/** OpenAI's limit on top_logprobs. */
const MAX_TOP_LOGPROBS = 20;

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

const utf8 = new TextEncoder();

/**
 * llama.cpp threads when the caller names none: half the cores, at most 4. llama.cpp's own default (every core,
 * spinning between ops) collapses when anything else runs: on a 2-core machine beside a test run, a 584-token prompt
 * and 32 sampled tokens of the small LM took 35–40 s with it and 0.2 s with one thread; a training round beside the
 * server needs the other half.
 */
export const SERVING_THREADS = Math.max(1, Math.min(4, Math.floor(os.availableParallelism() / 2)));

/** What produced a reply, as the reply's headers name it. */
interface Producer {
  modelId: string;
  version: number;
  sampling: { temperature: number; topP: number };
  /** The served GGUF's weights identity (model-files/weights-id.ts). */
  weights: string;
}
const producerHeaders = (p: Producer) => ({ [ADAPTER_VERSION_HEADER]: String(p.version), [MODEL_ID_HEADER]: p.modelId, [SAMPLING_HEADER]: JSON.stringify(p.sampling), [WEIGHTS_HEADER]: p.weights });

type Top = { id: number; logprob: number }[];
interface Gen {
  producer: Producer;
  ids: number[];
  logprobs: number[];
  /** Per position, the `top` most probable tokens (empty lists when none were asked for). */
  tops: Top[];
  finish: 'stop' | 'length';
  /** The prompt's ids as llama.cpp consumed them (promptIds: the chat template and tokenizer the trainer uses). */
  prompt: number[];
}

/** The GGUF loaded in llama.cpp, one context per adapter version, and the queue that runs one generation at a time. */
interface LoadedModel {
  core: ReinCore;
  tok: ReinTokenizer;
  /** The ids that end a reply (turnStopIds). */
  stops: ReadonlySet<number>;
  hfDir: string;
  modelName: string;
  /** The served GGUF's weights identity: a round trains on-policy only from turns sampled from the base's own weights. */
  weights: string;
  contextSize: number;
  contextFor(version: number, loraPath: string | null): Promise<LlamaContext>;
  log: (line: string) => void;
  /** True once close() began: a generation in flight stops at its next token instead of running to max_tokens. */
  closing(): boolean;
  stopGenerating(): void;
  /** Runs `job` after every earlier one (the context has one sequence). */
  serial(job: () => Promise<void>): Promise<void>;
  close(): Promise<void>;
}

/**
 * The ids that end a reply: the tokenizer's end-of-turn ids, and every special token the chat template writes
 * between two turns (Qwen's `<|im_end|>` and `<|im_start|>`, Llama 3's `<|eot_id|>` and `<|start_header_id|>`): a
 * model that samples the next turn's opener has ended its own, and the token is not text to show.
 */
export function turnStopIds(tok: ReinTokenizer): ReadonlySet<number> {
  const stops = new Set(tok.eosIds);
  if (tok.chatTemplate === null) return stops;
  const A = 'ReinUserMarkA';
  const B = 'ReinAssistantMarkB';
  let text: string;
  try {
    text = tok.renderChat([{ role: 'user', content: A }, { role: 'assistant', content: B }, { role: 'user', content: A }], { addGenerationPrompt: false });
  } catch {
    return stops;
  }
  const b = text.indexOf(B);
  const a2 = text.indexOf(A, b);
  if (b < 0 || a2 < 0) return stops;
  for (const id of tok.encode(text.slice(b + B.length, a2))) {
    // A special token: text of its own, none when special tokens are skipped.
    if (tok.decode([id]) !== '' && tok.decode([id], { skipSpecialTokens: true }) === '') stops.add(id);
  }
  return stops;
}

async function loadModel(opts: ModelServerOptions, gguf: string, hfDir: string, log: (line: string) => void): Promise<LoadedModel> {
  const { core } = opts;
  const contextSize = opts.contextSize ?? core.settings()['serving.contextSize'];
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, progressLogs: false });
  const model: LlamaModel = await llama.loadModel({ modelPath: gguf, gpuLayers: 0 });
  const tok = loadModelTokenizer(hfDir);
  const contexts = new Map<number, LlamaContext>();
  let queue: Promise<unknown> = Promise.resolve();
  let closing = false;

  async function contextFor(version: number, loraPath: string | null): Promise<LlamaContext> {
    let ctx = contexts.get(version);
    if (ctx === undefined) {
      ctx = await model.createContext({
        contextSize,
        sequences: 1,
        threads: opts.threads ?? SERVING_THREADS,
        flashAttention: false,
        ...(opts.exactKv === true ? { experimentalKvCacheKeyType: 'F32' as const, experimentalKvCacheValueType: 'F32' as const } : {}),
        lora: loraPath === null ? undefined : { adapters: [{ filePath: loraPath, scale: 1 }] },
      });
      contexts.set(version, ctx);
    }
    return ctx;
  }

  const dispose = core.on('adapterChanged', () => {
    const active = core.store.adapters.active(activeModelId(core))?.version ?? 0;
    for (const [v, ctx] of contexts) if (v !== active) {
      contexts.delete(v);
      void queue.then(() => ctx.dispose());
    }
  });

  return {
    core,
    tok,
    stops: turnStopIds(tok),
    hfDir,
    modelName: path.basename(gguf, '.gguf'),
    weights: weightsId(gguf, { cacheFile: weightsIdCacheFile(core.home.modelsDir) }),
    contextSize,
    contextFor,
    log,
    closing: () => closing,
    stopGenerating: () => {
      closing = true;
    },
    async serial(job) {
      const run = queue.then(job);
      queue = run.catch(() => {});
      await run;
    },
    async close() {
      closing = true;
      dispose();
      await queue;
      for (const c of contexts.values()) await c.dispose();
      await model.dispose();
    },
  };
}

export async function startModelServer(opts: ModelServerOptions): Promise<ModelServer> {
  const { core } = opts;
  const log = opts.log ?? ((line: string) => process.stderr.write(line + '\n'));
  const { gguf, hfDir } = opts.gguf === undefined ? baseGguf(core, log) : { gguf: opts.gguf, hfDir: (() => { try { return resolveModelDir(core.store, activeModelId(core)); } catch { return null; } })() };
  if (hfDir === null) throw new NotAvailableError('serve-model', `the model's tokenizer and chat template are needed (model.active: ${SET_UP_A_MODEL}): Rein renders chats the way the trainer does`);
  const loaded = await loadModel(opts, gguf, hfDir, log);
  let port = opts.port;

  const server: Server = createServer((req, res) => {
    handle(loaded, opts.token, port, req, res).catch((e: unknown) => {
      if (!(e instanceof UnknownVersionError)) log(`rein model server: ${(e as Error)?.stack ?? String(e)}`);
      if (res.headersSent) res.destroy();
      else if (e instanceof UnknownVersionError) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: e.message, type: 'invalid_request_error', code: 'model_not_found' } }));
      } else if (e instanceof ContextLengthError) {
        // OpenAI's code for it (its error reference), so clients show it as the prompt being too long.
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: e.message, type: 'invalid_request_error', code: 'context_length_exceeded' } }));
      } else {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: (e as Error).message, type: 'internal_error' } }));
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: opts.port, exclusive: true }, () => resolve());
  });
  port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}/v1`,
    gguf,
    async close() {
      loaded.stopGenerating();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await loaded.close();
    },
  };
}

async function handle(g: LoadedModel, token: string, port: number, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const denied = checkHostAndOrigin(req.headers, port) ?? checkToken(req.headers, token);
  if (denied) {
    res.writeHead(denied.code === 'forbidden' ? 403 : 401, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: denied.message, type: denied.code } }));
    return;
  }
  const p = (req.url ?? '/').split('?')[0];
  if (p === '/v1/models' && req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ object: 'list', data: [{ id: g.modelName, object: 'model', owned_by: 'rein' }] }));
    return;
  }
  if (p === '/v1/chat/completions' && req.method === 'POST') return chatCompletions(g, req, res);
  res.writeHead(404, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { message: `no route ${req.method} ${p}`, type: 'not_found' } }));
}

/** Samples a reply; stops early (finish 'length') once `gone` says the client has left, so a dropped request does not hold the queue. */
async function generate(g: LoadedModel, chat: ChatRequest, top: number, onToken: (id: number, lp: number, tops: Top, producer: Producer, prompt: readonly number[]) => void, gone: () => boolean): Promise<Gen> {
  const { core, tok, stops, contextSize, hfDir, log, weights } = g;
  const modelId = activeModelId(core);
  // `model: "rein@v3"` or `"rein@base"` asks for one version (the chat's version picker, the arena); any other name
  // gets the active one.
  const asked = versionOfModelName(chat.model);
  const adapter = asked === null ? core.store.adapters.active(modelId) : asked === 0 ? null : core.store.adapters.byVersion(modelId, asked);
  if (asked !== null && asked !== 0 && (adapter === null || !existsSync(adapter.path))) throw new UnknownVersionError(asked, adapter === null ? 'does not exist' : 'was pruned (its files are gone)');
  const version = adapter?.version ?? 0;
  const lora = adapter === null ? null : ensureGgufLora(adapter, hfDir);
  const prompt = promptIds(tok, chat);
  // No max_tokens: up to the end of the context, as OpenAI's API means it (Codex sends none on the Responses API, and a
  // cap of our own would end its answers as incomplete).
  const cap = Number((chat as { max_tokens?: unknown }).max_tokens ?? (chat as { max_completion_tokens?: unknown }).max_completion_tokens ?? Infinity) || Infinity;
  const maxTokens = Math.min(cap, contextSize - prompt.length);
  if (maxTokens <= 0) throw new ContextLengthError(prompt.length, contextSize);
  const temperature = typeof chat.temperature === 'number' ? chat.temperature : 1;
  const topP = typeof chat.top_p === 'number' ? chat.top_p : 1;
  const rng = new Rng(typeof chat.seed === 'number' ? chat.seed : Date.now());
  const ctx = await g.contextFor(version, lora);
  const seq = ctx.getSequence();
  const started = performance.now();
  const ids: number[] = [];
  let finish: Gen['finish'] = 'length';
  try {
    const logprobs: number[] = [];
    const tops: Top[] = [];
    const sampled = { logprob: 0 };
    const producer: Producer = { modelId, version, sampling: { temperature, topP }, weights };
    let input: ControlledEvaluateInputItem[] = prompt.map((t, i) => (i === prompt.length - 1 ? [t as Token, { generateNext: { logits: true } }] : (t as Token)));
    for (;;) {
      const out = await seq.controlledEvaluate(input);
      const logits = out[input.length - 1]?.next.logits;
      if (logits === undefined) throw new Error('llama.cpp returned no logits');
      const logp = logSoftmax(logits, logits.size);
      const id = pick(logp, temperature, topP, rng, sampled);
      const alts = top > 0 ? topK(logp, top) : [];
      ids.push(id);
      logprobs.push(sampled.logprob);
      tops.push(alts);
      onToken(id, sampled.logprob, alts, producer, prompt);
      if (stops.has(id)) {
        finish = 'stop';
        return { producer, ids, logprobs, tops, finish, prompt };
      }
      if (ids.length >= maxTokens || gone()) return { producer, ids, logprobs, tops, finish, prompt };
      input = [[id as Token, { generateNext: { logits: true } }]];
    }
  } finally {
    seq.dispose();
    log(`rein model server: v${version}, prompt ${prompt.length} tokens → ${ids.length} tokens (${gone() ? 'client gone' : finish}) in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
}

/** The reply's text and its logprob entries, from token ids. */
function replyText(tok: ReinTokenizer, stops: ReadonlySet<number>) {
  /** The reply text of ids so far: the end-of-turn token is not text, and a split UTF-8 character waits for its rest. */
  const textOf = (ids: readonly number[]): string => tok.decode(ids.filter((t) => !stops.has(t)));
  const one = (id: number, lp: number) => {
    const token = tok.decode([id]);
    return { id, token, logprob: lp, bytes: Array.from(utf8.encode(token)) };
  };
  const entry = (id: number, lp: number, alts: Top) => ({ ...one(id, lp), top_logprobs: alts.map((a) => one(a.id, a.logprob)) });
  return { textOf, entry };
}

/** A reply without tools: all of it is text, sent as it comes. */
function plainText(): { push(full: string): StreamPiece[]; end(full: string): StreamPiece[] } {
  let sent = 0;
  const push = (full: string): StreamPiece[] => {
    const t = full.slice(sent);
    sent = full.length;
    return t === '' ? [] : [{ type: 'text', text: t }];
  };
  return { push, end: push };
}

async function chatCompletions(m: LoadedModel, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { tok, modelName } = m;
  const { textOf, entry } = replyText(tok, m.stops);
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
  // With tools declared, a reply may hold calls in the model's own format (toolcalls.ts): its text streams as it is
  // sampled, up to where a call may begin, and each call goes out as `delta.tool_calls` once it has been read whole.
  const withTools = toolsOf(chat) !== null;
  const family = toolFamily(tok.chatTemplate);
  const split = (text: string) => (withTools ? parseToolCalls(text, family) : { text, calls: [] });
  const callId = (i: number) => `call_rein_${id.slice(-8)}_${i}`;
  const toolCalls = (calls: { name: string; arguments: string }[]) =>
    calls.map((c, i) => ({ index: i, id: callId(i), type: 'function', function: { name: c.name, arguments: c.arguments } }));
  const usage = (g: Gen) => ({ prompt_tokens: g.prompt.length, completion_tokens: g.ids.length, total_tokens: g.prompt.length + g.ids.length });
  // vLLM's `return_token_ids` (its chat completions API): the prompt's ids as the model consumed them, in
  // `prompt_token_ids` of a whole reply and of a stream's first chunk. The proxy stores them with an agent's turn, so
  // a round conditions π on exactly the context μ was sampled under (training/data.ts).
  const withIds = (chat as { return_token_ids?: unknown }).return_token_ids === true;
  let left = false;
  res.on('close', () => (left = !res.writableFinished));
  const gone = () => left || m.closing();
  await m.serial(async () => {
    if (chat.stream === true) {
      let started = false;
      const sofar: number[] = [];
      const reading = withTools ? new ToolCallStream(family) : plainText();
      let calls = 0;
      const send = (obj: unknown) => res.write(`data: ${JSON.stringify(obj)}\n\n`);
      let first: { prompt_token_ids: readonly number[] } | null = null;
      const chunk = (delta: unknown, logprobs: unknown, finish: string | null) => {
        send({ id, object: 'chat.completion.chunk', created, model: modelName, ...first, choices: [{ index: 0, delta, logprobs, finish_reason: finish }] });
        first = null;
      };
      /** The pieces as chunks: text as `content`, with the token's logprobs on the first; each call whole. */
      const write = (pieces: StreamPiece[], lps: unknown) => {
        let text = '';
        for (const p of pieces) if (p.type === 'text') text += p.text;
        chunk(text === '' ? {} : { content: text }, lps, null);
        for (const p of pieces) {
          if (p.type !== 'call') continue;
          const i = calls++;
          chunk({ tool_calls: [{ index: i, id: callId(i), type: 'function', function: { name: p.call.name, arguments: p.call.arguments } }] }, withLp ? { content: [] } : null, null);
        }
      };
      const g = await generate(m, chat, top, (tid, lp, alts, producer, prompt) => {
        sofar.push(tid);
        if (!started) {
          started = true;
          // The prompt's size before the first token: an Anthropic stream names it in message_start (agent-proxy.ts).
          res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...producerHeaders(producer), [PROMPT_TOKENS_HEADER]: String(prompt.length) });
          if (withIds) first = { prompt_token_ids: prompt };
        }
        const full = textOf(sofar);
        // A split UTF-8 character waits for its rest.
        write(full.endsWith('\uFFFD') ? [] : reading.push(full), withLp ? { content: [entry(tid, lp, alts)] } : null);
      }, gone);
      // The text's tokens were listed already: an empty list, not null, says this chunk holds no new ones.
      const last = reading.end(textOf(g.ids));
      if (last.length > 0) write(last, withLp ? { content: [] } : null);
      chunk({}, null, calls > 0 ? 'tool_calls' : g.finish);
      if ((chat as { stream_options?: { include_usage?: unknown } }).stream_options?.include_usage === true) send({ id, object: 'chat.completion.chunk', created, model: modelName, choices: [], usage: usage(g) });
      res.end('data: [DONE]\n\n');
      return;
    }
    const g = await generate(m, chat, top, () => {}, gone);
    const parsed = split(textOf(g.ids));
    const message = parsed.calls.length > 0 ? { role: 'assistant', content: parsed.text === '' ? null : parsed.text, tool_calls: toolCalls(parsed.calls) } : { role: 'assistant', content: parsed.text };
    res.writeHead(200, { 'content-type': 'application/json', ...producerHeaders(g.producer) });
    res.end(
      JSON.stringify({
        id,
        object: 'chat.completion',
        created,
        model: modelName,
        ...(withIds ? { prompt_token_ids: g.prompt } : {}),
        choices: [{ index: 0, message, logprobs: withLp ? { content: g.ids.map((t, i) => entry(t, g.logprobs[i]!, g.tops[i]!)) } : null, finish_reason: parsed.calls.length > 0 ? 'tool_calls' : g.finish }],
        usage: usage(g),
      }),
    );
  });
}
