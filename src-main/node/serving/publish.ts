// Publishing the active adapter to the user's model servers (SPECS.md: Ollama, vLLM, GGUF and llama.cpp sections):
//   Ollama      GGUF LoRA → HEAD/POST /api/blobs/sha256:<digest> → POST /api/create {model, from, adapters}, as a
//               versioned tag <name>:vN and the stable alias <name> (Ollama's :latest). No hot swap: a new tag.
//   vLLM        POST /v1/load_lora_adapter {lora_name: <name>-vN, lora_path}, then the other versions unloaded.
//   llama-server --lora launch arguments for every kept version; with a URL, a scales-only switch through
//               POST /lora-adapters, then each slot's cache erased (it cannot load new files at runtime).
//   LM Studio   a merged GGUF (base weights + B·A·α/r fused) in its models folder, one folder per version.
// Each target runs after activation and after rollback, when enabled in its setting. A failure never blocks
// activation or training: it is recorded, with the server's own message, in the adapter's `publish` JSON.
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import type { Settings } from '../../common/config.ts';
import type { AdapterView } from '../../common/domain.ts';
import { ReinError } from '../../common/errors.ts';
import { modelLinearParams, parseModelConfig } from '../../common/engine/families/registry.ts';
import { fuse, loraScale } from '../../common/engine/lora.ts';
import type { ReinCore } from '../core/core.ts';
import { hfToGguf } from '../engine/gguf/convert.ts';
import { peftToGguf } from '../engine/gguf/lora.ts';
import { loadModel } from '../engine/hf.ts';
import { loadPeftAdapter } from '../engine/peft.ts';
import { writeSafetensors } from '../engine/safetensors.ts';
import type { TensorToWrite } from '../engine/safetensors.ts';
import { resolveModelDir } from '../model-files/base-model.ts';
import { GGUF_LORA } from '../model-files/adapter-versions.ts';
import { adapterFacts, lintAdapter, PUBLISH_TARGETS, vllmRankFor } from './lint.ts';
import type { PublishTarget } from './lint.ts';
import { activeModelId } from './producer.ts';

export class PublishError extends ReinError {
  constructor(target: PublishTarget, message: string, detail?: unknown) {
    super('conflict', `${target}: ${message}`, { detail: { target, ...(detail as object) } });
    this.name = 'PublishError';
  }
}

export interface Outcome {
  ok: boolean;
  message: string;
  model?: string;
}

/** One publish: the model, its HF directory, and the version to serve (null: the base model, after a rollback to 0). */
export interface PublishJob {
  modelId: string;
  modelDir: string;
  adapter: AdapterView | null;
  /** Every version of the model (llama-server preloads the kept ones). */
  adapters: AdapterView[];
  settings: Settings;
  /** Where llama-server arguments are written. */
  servingDir: string;
  timeoutMs: number;
}

const readJson = (file: string): Record<string, unknown> => JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
const peftDirOf = (a: AdapterView): string => path.join(a.path, 'peft');

/**
 * The version's GGUF LoRA: a round writes it with the version (model-files/adapter-versions.ts); a version made before that
 * gets it here, once, from its PEFT files (the GGUF writer itself writes a temporary file and renames it).
 */
export function ensureGgufLora(a: AdapterView, modelDir: string): string {
  const out = path.join(a.path, GGUF_LORA);
  if (!existsSync(out)) peftToGguf(peftDirOf(a), parseModelConfig(readJson(path.join(modelDir, 'config.json'))), out, { name: `rein-v${a.version}` });
  return out;
}

/** The message a server put in its error body: Ollama {error}, vLLM/OpenAI {message} or {error:{message}}, FastAPI {detail}. */
function serverMessage(status: number, text: string): string {
  let msg = text.trim();
  try {
    const j = JSON.parse(text) as Record<string, unknown>;
    const e = j.error;
    const m = typeof e === 'string' ? e : typeof (e as { message?: unknown })?.message === 'string' ? (e as { message: string }).message : j.message ?? j.detail;
    if (typeof m === 'string') msg = m;
    else if (m !== undefined) msg = JSON.stringify(m);
  } catch {
    // not JSON: the text as it came
  }
  return `HTTP ${status}: ${msg.slice(0, 2000) || '(empty body)'}`;
}

async function call(
  target: PublishTarget,
  method: string,
  url: string,
  body: unknown,
  timeoutMs: number,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string }> {
  let res: Response;
  try {
    const isBytes = body instanceof Uint8Array;
    res = await fetch(url, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': isBytes ? 'application/octet-stream' : 'application/json' }), ...headers },
      body: body === undefined ? undefined : isBytes ? (body as Uint8Array<ArrayBuffer>) : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (e) {
    const cause = (e as { cause?: { message?: string } }).cause?.message;
    // The record is what the Versions screen shows, so it names the command that retries once the server is up.
    throw new PublishError(target, `${method} ${url} failed: ${cause ?? (e as Error).message}; start the server, then run: rein publish --target ${target}`);
  }
  try {
    return { status: res.status, text: await boundedText(res, PUBLISH_REPLY_MAX_BYTES) };
  } catch (e) {
    throw new PublishError(target, `${method} ${url} failed while reading the reply: ${(e as Error).message}`);
  }
}

/** The serving APIs answer in kilobytes; a reply past this is a misbehaving server and is cut (issue #19 item 5). */
const PUBLISH_REPLY_MAX_BYTES = 1024 ** 2;

/** The body as text, refusing one longer than `max` bytes instead of holding an endless body in memory. */
async function boundedText(res: Response, max: number): Promise<string> {
  if (res.body === null) return '';
  const parts: Uint8Array[] = [];
  let n = 0;
  for await (const c of res.body) {
    n += c.length;
    if (n > max) {
      await res.body.cancel().catch(() => undefined);
      throw new Error(`the server's reply passed ${max / 1024 ** 2} MiB, far more than a serving API answers; it was cut there`);
    }
    parts.push(c);
  }
  return Buffer.concat(parts).toString('utf8');
}

function nameOf(base: string): string {
  // Ollama names are <name>[:<tag>]; the base's tag becomes part of the name (qwen2.5:0.5b → qwen2.5-0.5b-rein).
  return `${base.replace(/:latest$/, '').replace(/[:/]/g, '-')}-rein`;
}

async function publishOllama(job: PublishJob): Promise<Outcome> {
  const s = job.settings['publish.ollama'];
  if (s.base === null) throw new PublishError('ollama', 'set publish.ollama.base to the Ollama name of the base model (e.g. qwen2.5:0.5b)');
  const root = s.url.replace(/\/+$/, '');
  const name = nameOf(s.base);
  let adapters: Record<string, string> | undefined;
  if (job.adapter !== null) {
    const gguf = ensureGgufLora(job.adapter, job.modelDir);
    const bytes = readFileSync(gguf);
    const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
    const head = await call('ollama', 'HEAD', `${root}/api/blobs/${digest}`, undefined, job.timeoutMs);
    if (head.status === 404) {
      const up = await call('ollama', 'POST', `${root}/api/blobs/${digest}`, new Uint8Array(bytes), job.timeoutMs);
      if (up.status !== 201 && up.status !== 200) throw new PublishError('ollama', `uploading the adapter blob: ${serverMessage(up.status, up.text)}`);
    } else if (head.status !== 200) {
      throw new PublishError('ollama', `checking the adapter blob: ${serverMessage(head.status, head.text)}`);
    }
    adapters = { 'adapter.gguf': digest };
  }
  const tag = job.adapter === null ? `${name}:base` : `${name}:v${job.adapter.version}`;
  for (const model of [tag, name]) {
    const r = await call('ollama', 'POST', `${root}/api/create`, { model, from: s.base, ...(adapters ? { adapters } : {}), stream: false }, job.timeoutMs);
    if (r.status !== 200) throw new PublishError('ollama', `creating ${model}: ${serverMessage(r.status, r.text)}`);
  }
  return { ok: true, message: `created ${tag} and ${name} from ${s.base}${adapters ? ` with adapter ${adapters['adapter.gguf']}` : ' (no adapter)'}`, model: tag };
}

/**
 * The name vLLM serves one version under. vLLM keys its prefix cache by lora_name (v1/core/kv_cache_utils.py,
 * the extra keys of a block hash), so reloading new weights under one name would serve the new version from blocks
 * the old one computed (vLLM issue #42125): each version gets its own name, and the proxy maps `publish.vllm.name`
 * to the active one (producer.ts upstreamModelResolver).
 */
export const vllmVersionName = (name: string, version: number): string => `${name}-v${version}`;

async function publishVllm(job: PublishJob): Promise<Outcome> {
  const s = job.settings['publish.vllm'];
  const root = s.url.replace(/\/+$/, '');
  const auth: Record<string, string> = s.apiKey ? { authorization: `Bearer ${s.apiKey}` } : {};
  const runtimeOff = 'vLLM has no runtime LoRA endpoints: start it with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True and --enable-lora';
  // vllm/entrypoints/serve/lora/api_router.py: POST /v1/load_lora_adapter {lora_name, lora_path} and
  // /v1/unload_lora_adapter {lora_name}; 200 with a text body, or an OpenAI error JSON.
  const wanted = job.adapter === null ? null : vllmVersionName(s.name, job.adapter.version);
  if (job.adapter !== null && wanted !== null) {
    const r = await call('vllm', 'POST', `${root}/v1/load_lora_adapter`, { lora_name: wanted, lora_path: peftDirOf(job.adapter) }, job.timeoutMs, auth);
    const msg = serverMessage(r.status, r.text);
    // A name already loaded (this version published before) is the same weights under the same name: fine.
    if (r.status !== 200 && !/already (been )?loaded/i.test(r.text)) {
      if (r.status === 404 && !/lora|adapter/i.test(r.text)) throw new PublishError('vllm', `${runtimeOff} (${msg})`);
      if (/max_lora_rank|max-lora-rank|lora rank/i.test(r.text)) {
        throw new PublishError('vllm', `the adapter's rank is above vLLM's --max-lora-rank: restart vLLM with --max-lora-rank ${vllmRankFor(Number(readJson(path.join(peftDirOf(job.adapter), 'adapter_config.json')).r))} (${msg})`);
      }
      if (/enable.lora|lora is not enabled|LoRA is not enabled/i.test(r.text)) throw new PublishError('vllm', `start vLLM with --enable-lora (${msg})`);
      throw new PublishError('vllm', `loading v${job.adapter.version}: ${msg}`);
    }
  }
  // The other versions' names (and the one unversioned name older Rein used) are unloaded after the new one is in,
  // so a request never finds none. A refusal means the name was not loaded, which is fine.
  const others = [s.name, ...job.adapters.map((a) => vllmVersionName(s.name, a.version))].filter((n) => n !== wanted);
  for (const name of others) {
    const un = await call('vllm', 'POST', `${root}/v1/unload_lora_adapter`, { lora_name: name }, job.timeoutMs, auth);
    if (un.status === 404 && !/lora|adapter/i.test(un.text)) throw new PublishError('vllm', `${runtimeOff} (${serverMessage(un.status, un.text)})`);
  }
  if (wanted === null) return { ok: true, message: `unloaded every ${s.name} version; the base serves under its own name` };
  return { ok: true, message: `loaded v${job.adapter!.version} as ${wanted} (the proxy maps ${s.name} to it)`, model: wanted };
}

/**
 * One `--lora` value. common/arg.cpp (`--lora`) splits its value with parse_csv_row, so a path with a comma or a
 * quote is written as a CSV field in double quotes (a quote doubled). `--lora-scaled` is not used: it takes one
 * `FNAME:SCALE` value and splits it at every `:`, which a Windows drive letter already breaks.
 */
export const loraArg = (file: string): string => (/[,"]/.test(file) ? `"${file.replaceAll('"', '""')}"` : file);

/**
 * The llama-server launch arguments for these adapter files. Every file loads at scale 1 (`--lora`) and llama-server
 * serves them all until Rein sets the scales through POST /lora-adapters (`--lora-init-without-apply` does not help:
 * server-context.cpp copies params_base.lora_adapters, still at 1.0, into each slot; llama.cpp issue #28674).
 * `--slots` (GET /slots, on by default) lists the slots and `--slot-save-path` enables POST /slots/<id>?action=erase, which Rein calls after a switch because the switch leaves
 * each slot's KV cache computed under the old scales (server-context.cpp, SERVER_TASK_TYPE_SET_LORA); `--cache-ram 0`
 * turns off the host prompt cache, which would restore such a state.
 */
export function llamaServerArgs(ggufs: readonly string[], slotDir: string): string[] {
  return ['--slots', '--slot-save-path', slotDir, '--cache-ram', '0', ...ggufs.flatMap((g) => ['--lora', loraArg(g)])];
}

async function publishLlamaServer(job: PublishJob): Promise<Outcome> {
  const s = job.settings['publish.llamaServer'];
  // Every version kept on disk is preloaded, so a later switch among them is a scales-only switch.
  const kept = job.adapters.filter((a) => a.status !== 'rejected' && existsSync(peftDirOf(a))).sort((a, b) => a.version - b.version);
  const files = kept.map((a) => ({ version: a.version, gguf: ensureGgufLora(a, job.modelDir) }));
  mkdirSync(job.servingDir, { recursive: true });
  const slotDir = path.join(job.servingDir, 'llama-server-slots');
  mkdirSync(slotDir, { recursive: true });
  const args = llamaServerArgs(files.map((f) => f.gguf), slotDir);
  const argsFile = path.join(job.servingDir, 'llama-server.args');
  writeFileSync(argsFile, args.map((a) => (/[\s"'\\]/.test(a) ? `'${a.replaceAll("'", "'\\''")}'` : a)).join(' ') + '\n');
  const wanted = job.adapter === null ? null : files.find((f) => f.version === job.adapter!.version)!.gguf;
  const which = wanted === null ? 'the base model' : `v${job.adapter!.version}`;
  if (s.url === null) {
    return { ok: false, message: `wrote the launch arguments to ${argsFile}, but nothing selects ${which}: start llama-server with them (eval llama-server -m <model.gguf> "$(cat ${argsFile})") and run rein settings set publish.llamaServer.url http://127.0.0.1:8080` };
  }
  const root = s.url.replace(/\/+$/, '');
  const restart = `restart it with: eval llama-server -m <model.gguf> "$(cat ${argsFile})"`;
  const g = await call('llamaServer', 'GET', `${root}/lora-adapters`, undefined, job.timeoutMs);
  if (g.status !== 200) throw new PublishError('llamaServer', `reading /lora-adapters: ${serverMessage(g.status, g.text)}`);
  const loaded = JSON.parse(g.text) as { id: number; path: string; scale: number }[];
  const hit = wanted === null ? null : loaded.find((l) => path.resolve(l.path) === path.resolve(wanted));
  if (wanted !== null && hit === undefined) {
    throw new PublishError('llamaServer', `${which} is not preloaded (llama-server cannot load adapter files at runtime): ${restart}`);
  }
  // server-context.cpp parse_lora_request: [{id, scale}]; an adapter left out of the list gets scale 0.
  const scales = loaded.map((l) => ({ id: l.id, scale: hit != null && l.id === hit.id ? 1 : 0 }));
  const p = await call('llamaServer', 'POST', `${root}/lora-adapters`, scales, job.timeoutMs);
  if (p.status !== 200) throw new PublishError('llamaServer', `setting adapter scales: ${serverMessage(p.status, p.text)}`);
  const check = await call('llamaServer', 'GET', `${root}/lora-adapters`, undefined, job.timeoutMs);
  const now = check.status === 200 ? (JSON.parse(check.text) as { id: number; scale: number }[]) : [];
  const wrong = scales.filter((w) => now.find((l) => l.id === w.id)?.scale !== w.scale);
  if (wrong.length > 0) throw new PublishError('llamaServer', `the scales did not apply (asked ${JSON.stringify(scales)}, serving ${check.text.slice(0, 200)})`);
  // Slots keep KV computed under the old scales, and a prompt sharing their prefix would reuse it (llama.cpp issue
  // #26207): erase each (server-context.cpp handle_slots_erase; GET /slots lists them).
  const sl = await call('llamaServer', 'GET', `${root}/slots`, undefined, job.timeoutMs);
  if (sl.status !== 200) throw new PublishError('llamaServer', `listing slots to clear their cache: ${serverMessage(sl.status, sl.text)}`);
  for (const slot of JSON.parse(sl.text) as { id: number }[]) {
    const e = await call('llamaServer', 'POST', `${root}/slots/${slot.id}?action=erase`, {}, job.timeoutMs);
    if (e.status !== 200) {
      throw new PublishError('llamaServer', `erasing slot ${slot.id} after the switch (it would serve the old version's cache): ${serverMessage(e.status, e.text)}; ${restart}`);
    }
  }
  return { ok: true, message: `serving ${which} at ${root} (scales set, slot caches erased); launch arguments in ${argsFile}` };
}

/** Base weights with the adapter fused in (W + (α/r)·B·A), written as an HF directory, then converted to GGUF. */
export function mergedGguf(modelDir: string, a: AdapterView, out: string): void {
  const stage = `${out}.stage-${process.pid}`;
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(stage, { recursive: true });
  try {
    const m = loadModel(modelDir, { tokenizer: false });
    try {
      const { adapter } = loadPeftAdapter(peftDirOf(a), modelLinearParams(m.config));
      const pairs = new Map(adapter.pairs.map((p) => [p.baseKey, p]));
      const scale = loraScale(adapter.spec);
      const tensors: Record<string, TensorToWrite> = {};
      for (const p of m.params) {
        const w = m.read(p.hfKey, { as: 'f32' }) as Float32Array;
        const pair = pairs.get(p.hfKey);
        tensors[p.hfKey] = { shape: p.shape, data: pair === undefined ? w : fuse(w, pair, adapter.spec.r, scale) };
      }
      writeSafetensors(path.join(stage, 'model.safetensors'), tensors);
    } finally {
      m.close();
    }
    for (const f of ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'chat_template.jinja', 'special_tokens_map.json']) {
      if (existsSync(path.join(modelDir, f))) copyFileSync(path.join(modelDir, f), path.join(stage, f));
    }
    const tmp = `${out}.tmp-${process.pid}`;
    hfToGguf(stage, tmp, { name: path.basename(out, '.gguf') });
    renameSync(tmp, out);
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

async function publishLmStudio(job: PublishJob): Promise<Outcome> {
  const s = job.settings['publish.lmStudio'];
  if (job.adapter === null) return { ok: true, message: 'the base model needs no merged file; load the base in LM Studio' };
  const root = s.modelsDir ?? path.join(homedir(), '.lmstudio', 'models');
  // LM Studio lists <models>/<publisher>/<model>/<file>.gguf.
  const name = `${path.basename(job.modelDir)}-rein-v${job.adapter.version}`;
  const dir = path.join(root, 'rein', name);
  const out = path.join(dir, `${name}.gguf`);
  mkdirSync(dir, { recursive: true });
  if (!existsSync(out)) mergedGguf(job.modelDir, job.adapter, out);
  return { ok: true, message: `wrote ${out}`, model: `rein/${name}` };
}

const PUBLISHERS: Record<PublishTarget, (job: PublishJob) => Promise<Outcome>> = {
  ollama: publishOllama,
  vllm: publishVllm,
  llamaServer: publishLlamaServer,
  lmStudio: publishLmStudio,
};

export function enabledTargets(s: Settings): PublishTarget[] {
  return PUBLISH_TARGETS.filter((t) => s[`publish.${t}`].enabled);
}

/** Runs one target: lint, then publish; never throws. */
export async function runTarget(target: PublishTarget, job: PublishJob): Promise<Outcome> {
  try {
    let warnings: string[] = [];
    if (job.adapter !== null) {
      const facts = adapterFacts(readJson(path.join(peftDirOf(job.adapter), 'adapter_config.json')), readJson(path.join(job.modelDir, 'config.json')));
      const lint = lintAdapter(target, facts, { vllmMaxLoraRank: job.settings['publish.vllm'].maxLoraRank });
      if (lint.errors.length > 0) return { ok: false, message: `${target}: not published: ${lint.errors.join('; ')}` };
      warnings = lint.warnings;
    }
    const out = await PUBLISHERS[target](job);
    return warnings.length === 0 ? out : { ...out, message: `${out.message} (note: ${warnings.join('; ')})` };
  } catch (e) {
    return { ok: false, message: e instanceof PublishError ? e.message : `${target}: ${(e as Error).message}` };
  }
}

/** Stores one target's outcome in the adapter's publish JSON (merged with the other targets'). */
export function recordOutcome(core: ReinCore, adapterId: number, target: PublishTarget, o: Outcome, at: number): void {
  core.store.adapters.recordPublish(adapterId, target, { ok: o.ok, message: o.message, at, ...(o.model === undefined ? {} : { model: o.model }) });
}

export interface PublishOptions {
  /** Only these targets (default: the enabled ones). */
  targets?: PublishTarget[];
  timeoutMs?: number;
}

/**
 * Publishes what is active now (the active version, or the base when none is) to the targets, and records each
 * outcome on the version (for the base, on the version that was just rolled back from, when given).
 */
export async function publishActive(core: ReinCore, opts: PublishOptions & { recordOn?: number } = {}): Promise<Record<string, Outcome>> {
  const settings = core.settings();
  const modelId = activeModelId(core);
  const targets = opts.targets ?? enabledTargets(settings);
  if (targets.length === 0) return {};
  const adapters = core.store.adapters.list(modelId);
  const active = adapters.find((a) => a.status === 'active') ?? null;
  let modelDir: string;
  try {
    modelDir = resolveModelDir(core.store, modelId, 'publish');
  } catch (e) {
    const o = { ok: false, message: `not published: ${(e as Error).message}` };
    return Object.fromEntries(targets.map((t) => [t, o]));
  }
  const job: PublishJob = {
    modelId,
    modelDir,
    adapter: active,
    adapters,
    settings,
    servingDir: path.join(core.home.dir, 'serving'),
    timeoutMs: opts.timeoutMs ?? 120_000,
  };
  const out: Record<string, Outcome> = {};
  const recordId = active?.id ?? adapters.find((a) => a.version === opts.recordOn)?.id;
  for (const t of targets) {
    out[t] = await runTarget(t, job);
    if (recordId !== undefined) recordOutcome(core, recordId, t, out[t], core.store.now());
  }
  return out;
}

/**
 * Publishes after each activation and rollback, one publish at a time (the newest state wins; a change that comes
 * while one runs is published after it). Returns the disposer of the listener.
 */
export function attachPublishers(core: ReinCore, log: (line: string) => void): () => void {
  let chain: Promise<void> = Promise.resolve();
  let last: string | null = null;
  return core.on('adapterChanged', (ev) => {
    // A rollback emits the old version's change and then the new one's; the active state is read when the job runs,
    // and a state already published is not published again.
    chain = chain.then(async () => {
      if (enabledTargets(core.settings()).length === 0) return;
      const modelId = activeModelId(core);
      const state = `${modelId}\0${core.store.adapters.active(modelId)?.id ?? 'base'}`;
      if (state === last) return;
      last = state;
      const result = await publishActive(core, { recordOn: ev.version });
      for (const [t, o] of Object.entries(result)) log(`rein publish ${t}: ${o.ok ? 'ok' : 'FAILED'}: ${o.message}`);
    }).catch((e: unknown) => log(`rein publish: ${(e as Error).message}`));
  });
}
