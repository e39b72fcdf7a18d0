// Publishers against small fake Ollama, vLLM and llama-server servers in this file, which check every field SPECS.md
// names; the adapter is a real PEFT directory on a tiny generated model, and its GGUF LoRA comes from the real writer.
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fromBase, loraSpec } from '../../common/engine/lora.ts';
import { llamaLinearParams, parseLlamaConfig } from '../../common/engine/families/llama.ts';
import { Rng } from '../../common/engine/rng.ts';
import { createCore } from '../core/core.ts';
import type { ReinCore } from '../core/core.ts';
import { savePeftAdapter } from '../engine/peft.ts';
import { writeTinyModel } from '../engine/tiny.ts';
import { resolveHome } from '../home.ts';
import { hfToGguf } from '../engine/gguf/convert.ts';
import { LlamaCppReferee } from '../engine/llamacpp.ts';
import { adapterFacts, lintAdapter, vllmRankFor } from './lint.ts';
import { upstreamModelResolver } from './producer.ts';
import { attachPublishers, ensureGgufLora, llamaServerArgs, loraArg, publishActive } from './publish.ts';

interface Seen {
  method: string;
  url: string;
  body: Buffer;
}

/** A fake server: `route` answers each request, and every request is kept for the assertions. */
async function fakeServer(route: (req: Seen) => { status: number; body?: unknown }): Promise<{ url: string; seen: Seen[]; close: () => Promise<void> }> {
  const seen: Seen[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const s = { method: req.method ?? '', url: req.url ?? '', body: Buffer.concat(chunks) };
      seen.push(s);
      const r = route(s);
      res.writeHead(r.status, { 'content-type': 'application/json' });
      res.end(r.body === undefined ? undefined : typeof r.body === 'string' ? r.body : JSON.stringify(r.body));
    });
  });
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const json = (b: Buffer): Record<string, unknown> => JSON.parse(b.toString('utf8')) as Record<string, unknown>;

let root: string;
let modelDir: string;
let core: ReinCore;

function writeVersion(version: number, r = 4, extraConfig: Record<string, unknown> = {}): string {
  const config = parseLlamaConfig(JSON.parse(readFileSync(path.join(modelDir, 'config.json'), 'utf8')));
  const adapter = fromBase(llamaLinearParams(config), loraSpec({ r, alpha: 2 * r }), version);
  const rng = new Rng(100 + version);
  for (const p of adapter.pairs) for (let i = 0; i < p.b.length; i++) p.b[i] = 0.01 * rng.normal();
  const dir = path.join(root, 'home', 'adapters', `v${version}`);
  savePeftAdapter(path.join(dir, 'peft'), adapter, { baseModel: modelDir });
  if (Object.keys(extraConfig).length > 0) {
    const cfgPath = path.join(dir, 'peft', 'adapter_config.json');
    const cfg = { ...JSON.parse(readFileSync(cfgPath, 'utf8')), ...extraConfig } as Record<string, unknown>;
    writeFileSync(cfgPath, JSON.stringify(cfg));
  }
  return dir;
}

beforeAll(() => {
  root = mkdtempSync(path.join(tmpdir(), 'rein-publish-'));
  modelDir = path.join(root, 'tiny');
  writeTinyModel(modelDir, { arch: 'qwen2', layers: 1, hidden: 32, heads: 2, kvHeads: 1, intermediate: 64 });
});

afterAll(() => {
  core?.close();
  rmSync(root, { recursive: true, force: true });
});

beforeEach(async () => {
  rmSync(path.join(root, 'home'), { recursive: true, force: true });
  core?.close();
  core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'home') }) });
  await core.call('setSettings', { values: { 'model.active': modelDir } }, 'test');
});

function addVersion(version: number, status: 'active' | 'inactive', extra: Record<string, unknown> = {}) {
  const dir = writeVersion(version, 4, extra);
  return core.store.adapters.insert({ modelId: modelDir, version, status, path: dir }, 'test');
}

describe('compatibility lint', () => {
  const base = { architectures: ['Qwen2ForCausalLM'] };
  const peft = { r: 16, use_dora: false, modules_to_save: null, target_modules: ['q_proj', 'v_proj'] };
  it('passes a plain LoRA everywhere it fits', () => {
    for (const t of ['ollama', 'vllm', 'llamaServer', 'lmStudio'] as const) expect(lintAdapter(t, adapterFacts(peft, base)).errors).toEqual([]);
  });
  it('refuses DoRA, modules_to_save, a rank above vLLM limit, embeddings and unknown architectures, naming the fix', () => {
    expect(lintAdapter('vllm', adapterFacts({ ...peft, use_dora: true }, base)).errors.join()).toMatch(/DoRA/);
    expect(lintAdapter('vllm', adapterFacts({ ...peft, modules_to_save: ['lm_head'] }, base)).errors.join()).toMatch(/modules_to_save \(lm_head\)/);
    expect(lintAdapter('vllm', adapterFacts({ ...peft, r: 32 }, base), { vllmMaxLoraRank: 16 }).errors.join()).toMatch(/--max-lora-rank 32/);
    // vllm/config/lora.py MaxLoRARanks: 1, 8, 16, 32, 64, 128, 256, 320, 512; vLLM refuses to start with any other.
    expect(lintAdapter('vllm', adapterFacts({ ...peft, r: 24 }, base), { vllmMaxLoraRank: 16 }).errors.join()).toMatch(/--max-lora-rank 32 and run rein settings set publish.vllm.maxLoraRank 32/);
    expect(lintAdapter('vllm', adapterFacts({ ...peft, r: 300 }, base), { vllmMaxLoraRank: 256 }).errors.join()).toMatch(/--max-lora-rank 320/);
    expect(lintAdapter('vllm', adapterFacts({ ...peft, r: 600 }, base), { vllmMaxLoraRank: 512 }).errors.join()).toMatch(/largest --max-lora-rank vLLM allows \(512\)/);
    expect([1, 2, 9, 33, 513].map(vllmRankFor)).toEqual([1, 8, 16, 64, null]);
    expect(lintAdapter('vllm', adapterFacts({ ...peft, r: 32 }, base), { vllmMaxLoraRank: 64 }).errors).toEqual([]);
    expect(lintAdapter('ollama', adapterFacts({ ...peft, modules_to_save: ['embed_tokens'] }, base)).errors.join()).toMatch(/full weights/);
    expect(lintAdapter('llamaServer', adapterFacts({ ...peft, target_modules: ['q_proj', 'embed_tokens'] }, base)).errors.join()).toMatch(/embed_tokens/);
    expect(lintAdapter('lmStudio', adapterFacts(peft, { architectures: ['PhiForCausalLM'] })).errors.join()).toMatch(/no GGUF mapping/);
    expect(lintAdapter('ollama', adapterFacts(peft, base)).warnings.join()).toMatch(/one adapter per model/);
  });
});

describe('llama-server arguments', () => {
  it('quote a path with a comma or a quote as common/arg.cpp parse_csv_row reads it, and keep a drive letter whole', () => {
    expect(loraArg('C:\\rein\\v1\\adapter.gguf')).toBe('C:\\rein\\v1\\adapter.gguf');
    expect(loraArg('/a,b/adapter.gguf')).toBe('"/a,b/adapter.gguf"');
    expect(loraArg('/a"b/x.gguf')).toBe('"/a""b/x.gguf"');
    expect(llamaServerArgs(['C:\\r\\a.gguf'], '/s')).toEqual(['--slots', '--slot-save-path', '/s', '--cache-ram', '0', '--lora', 'C:\\r\\a.gguf']);
  });
});

describe('publishers', () => {
  // ollama/ollama api/types.go CreateRequest: {model, from, adapters: {file name: "sha256:<hex>"}, stream}; the blobs
  // route (server/routes.go HeadBlobHandler / CreateBlobHandler) is /api/blobs/sha256:<hex>, 200 when present, 404
  // when not; server/create.go reads an adapter given by digest as a GGUF LoRA (the Modelfile ADAPTER line's form).
  it('Ollama: uploads the GGUF blob once, creates the versioned tag and the alias with from and adapters', async () => {
    const blobs = new Map<string, Buffer>();
    const ollama = await fakeServer((r) => {
      const blob = /^\/api\/blobs\/(sha256:[0-9a-f]{64})$/.exec(r.url);
      if (blob && r.method === 'HEAD') return { status: blobs.has(blob[1]!) ? 200 : 404 };
      if (blob && r.method === 'POST') {
        if (`sha256:${createHash('sha256').update(r.body).digest('hex')}` !== blob[1]) return { status: 400, body: { error: 'digest mismatch' } };
        blobs.set(blob[1]!, r.body);
        return { status: 201 };
      }
      if (r.url === '/api/create' && r.method === 'POST') {
        const b = json(r.body);
        const adapters = b.adapters as Record<string, string>;
        if (b.from !== 'qwen2.5:0.5b') return { status: 404, body: { error: `model '${String(b.from)}' not found` } };
        if (!Object.values(adapters).every((d) => blobs.has(d))) return { status: 400, body: { error: 'adapter blob missing' } };
        return { status: 200, body: { status: 'success' } };
      }
      return { status: 404, body: '404 page not found' };
    });
    try {
      await core.call('setSettings', { values: { 'publish.ollama': { enabled: true, url: ollama.url, base: 'qwen2.5:0.5b' } } }, 'test');
      const a = addVersion(1, 'active');
      const out = await publishActive(core);
      expect(out.ollama!.ok).toBe(true);
      const gguf = readFileSync(path.join(a.path, 'adapter.gguf'));
      expect(gguf.subarray(0, 4).toString()).toBe('GGUF');
      const digest = `sha256:${createHash('sha256').update(gguf).digest('hex')}`;
      expect(ollama.seen.map((s) => `${s.method} ${s.url}`)).toEqual([`HEAD /api/blobs/${digest}`, `POST /api/blobs/${digest}`, 'POST /api/create', 'POST /api/create']);
      const creates = ollama.seen.filter((s) => s.url === '/api/create').map((s) => json(s.body));
      expect(creates).toEqual([
        { model: 'qwen2.5-0.5b-rein:v1', from: 'qwen2.5:0.5b', adapters: { 'adapter.gguf': digest }, stream: false },
        { model: 'qwen2.5-0.5b-rein', from: 'qwen2.5:0.5b', adapters: { 'adapter.gguf': digest }, stream: false },
      ]);
      const rec = core.store.adapters.list(modelDir)[0]!.publish.ollama!;
      expect(rec).toMatchObject({ ok: true, model: 'qwen2.5-0.5b-rein:v1' });
      expect(rec.message).toMatch(/one adapter per model/);
      // Published again: the blob is already there, so it is not uploaded twice.
      await publishActive(core);
      expect(ollama.seen.filter((s) => s.method === 'POST' && s.url.startsWith('/api/blobs')).length).toBe(1);

      // A wrong base: the failure is recorded with Ollama's own message.
      await core.call('setSettings', { values: { 'publish.ollama': { enabled: true, url: ollama.url, base: 'nope:1b' } } }, 'test');
      const bad = await publishActive(core);
      expect(bad.ollama).toMatchObject({ ok: false });
      expect(core.store.adapters.list(modelDir)[0]!.publish.ollama!.message).toMatch(/model 'nope:1b' not found/);
    } finally {
      await ollama.close();
    }
  });

  it('vLLM: loads each version under its own name, then unloads the others; missing runtime updating and a too-small rank are named', async () => {
    let mode: 'ok' | 'no-runtime' | 'rank' = 'ok';
    const loaded = new Map<string, string>();
    // The shapes of vllm/entrypoints/openai/serving_models.py (OpenAIServingModels.load_lora_adapter,
    // unload_lora_adapter, _check_load_lora_adapter_request): {lora_name, lora_path} in; a text body on success; an
    // ErrorResponse {object: 'error', message, type, code} with the same HTTP status on failure. The engine keys its
    // prefix cache by lora_name (v1/core/kv_cache_utils.py), which is why a name must never change weights.
    const vllm = await fakeServer((r) => {
      if (mode === 'no-runtime') return { status: 404, body: { detail: 'Not Found' } };
      const b = json(r.body);
      if (r.url === '/v1/unload_lora_adapter') {
        if (!loaded.delete(String(b.lora_name))) return { status: 404, body: { object: 'error', message: `The lora adapter '${String(b.lora_name)}' cannot be found.`, type: 'NotFoundError', code: 404 } };
        return { status: 200, body: `Success: LoRA adapter '${String(b.lora_name)}' removed successfully.` };
      }
      if (r.url === '/v1/load_lora_adapter') {
        if (mode === 'rank') return { status: 400, body: { object: 'error', message: 'LoRA rank 4 is greater than max_lora_rank 2.', type: 'BadRequestError', code: 400 } };
        if (typeof b.lora_name !== 'string' || typeof b.lora_path !== 'string' || !existsSync(path.join(b.lora_path, 'adapter_config.json'))) {
          return { status: 400, body: { object: 'error', message: 'bad lora_path', type: 'BadRequestError', code: 400 } };
        }
        if (loaded.has(b.lora_name)) return { status: 400, body: { object: 'error', message: `The lora adapter '${b.lora_name}' has already been loaded.`, type: 'InvalidUserInput', code: 400 } };
        loaded.set(b.lora_name, b.lora_path);
        return { status: 200, body: `Success: LoRA adapter '${b.lora_name}' added successfully.` };
      }
      return { status: 404, body: { detail: 'Not Found' } };
    });
    try {
      await core.call('setSettings', { values: { 'publish.vllm': { enabled: true, url: vllm.url, name: 'my-rein', apiKey: null, maxLoraRank: 16 } } }, 'test');
      const a1 = addVersion(1, 'inactive');
      const a = addVersion(2, 'active');
      expect((await publishActive(core)).vllm).toMatchObject({ ok: true, model: 'my-rein-v2' });
      const calls = vllm.seen.map((s) => [s.url, json(s.body)]);
      expect(calls).toEqual([
        ['/v1/load_lora_adapter', { lora_name: 'my-rein-v2', lora_path: path.join(a.path, 'peft') }],
        ['/v1/unload_lora_adapter', { lora_name: 'my-rein' }],
        ['/v1/unload_lora_adapter', { lora_name: 'my-rein-v1' }],
      ]);
      // A rollback to v1 loads v1 under its own name: the name v2 served under never changes weights.
      await core.call('rollback', {}, 'test');
      expect((await publishActive(core)).vllm).toMatchObject({ ok: true, model: 'my-rein-v1' });
      expect(loaded).toEqual(new Map([['my-rein-v1', path.join(a1.path, 'peft')]]));
      // The proxy sends requests for my-rein to the name the active version was published under.
      expect(upstreamModelResolver(core)('my-rein')).toBe('my-rein-v1');
      expect(upstreamModelResolver(core)('other')).toBeNull();
      // Published again: vLLM says the name is loaded, which is the same weights.
      expect((await publishActive(core)).vllm).toMatchObject({ ok: true, model: 'my-rein-v1' });
      mode = 'no-runtime';
      const off = await publishActive(core);
      expect(off.vllm!.ok).toBe(false);
      expect(off.vllm!.message).toMatch(/VLLM_ALLOW_RUNTIME_LORA_UPDATING=True/);
      mode = 'rank';
      const rank = await publishActive(core);
      expect(rank.vllm!.message).toMatch(/--max-lora-rank 8 .*max_lora_rank 2/);
      expect(core.store.adapters.list(modelDir).find((x) => x.status === 'active')!.publish.vllm).toMatchObject({ ok: false });
      // The lint stops a rank above the configured limit before any request.
      const before = vllm.seen.length;
      await core.call('setSettings', { values: { 'publish.vllm': { enabled: true, url: vllm.url, name: 'my-rein', apiKey: null, maxLoraRank: 1 } } }, 'test');
      expect((await publishActive(core)).vllm!.message).toMatch(/rank 4 is above vLLM's --max-lora-rank 1: start vLLM with --max-lora-rank 8/);
      expect(vllm.seen.length).toBe(before);
      // A value vLLM would refuse at start is refused here, naming the allowed ones.
      await expect(core.call('setSettings', { values: { 'publish.vllm': { enabled: true, url: vllm.url, name: 'my-rein', apiKey: null, maxLoraRank: 24 } } }, 'test')).rejects.toThrow(/1, 8, 16, 32, 64, 128, 256, 320, 512/);
    } finally {
      await vllm.close();
    }
  });

  it('llama-server: launch arguments preload every kept version; a rollback switches scales only', async () => {
    const a1 = addVersion(1, 'inactive');
    const a2 = addVersion(2, 'active');
    let adapters: { id: number; path: string; scale: number }[] = [];
    const server = await fakeServer((r) => {
      if (r.url === '/lora-adapters' && r.method === 'GET') return { status: 200, body: adapters };
      if (r.url === '/lora-adapters' && r.method === 'POST') {
        const set = JSON.parse(r.body.toString()) as { id: number; scale: number }[];
        adapters = adapters.map((x) => ({ ...x, scale: set.find((s) => s.id === x.id)?.scale ?? 0 }));
        return { status: 200, body: { success: true } };
      }
      // server-context.cpp: GET /slots lists {id, …}; POST /slots/<id>?action=erase answers {id_slot, n_erased}.
      if (r.url === '/slots' && r.method === 'GET') return { status: 200, body: [{ id: 0 }, { id: 1 }] };
      if (/^\/slots\/\d\?action=erase$/.test(r.url) && r.method === 'POST') return { status: 200, body: { id_slot: Number(r.url[7]), n_erased: 3 } };
      return { status: 404 };
    });
    try {
      await core.call('setSettings', { values: { 'publish.llamaServer': { enabled: true, url: server.url } } }, 'test');
      // Not preloaded yet: the failure says to restart with the written arguments.
      const first = await publishActive(core);
      expect(first.llamaServer!.message).toMatch(/not preloaded.*restart/);
      const args = readFileSync(path.join(root, 'home', 'serving', 'llama-server.args'), 'utf8');
      // common/arg.cpp: `--lora FNAME` once per file (`--lora-scaled` takes one FNAME:SCALE value and throws
      // "lora-scaled format: FNAME:SCALE" on the two-argument form Rein once wrote).
      const slots = path.join(root, 'home', 'serving', 'llama-server-slots');
      expect(args.trim()).toBe(`--slots --slot-save-path ${slots} --cache-ram 0 --lora ${path.join(a1.path, 'adapter.gguf')} --lora ${path.join(a2.path, 'adapter.gguf')}`);
      adapters = [
        { id: 0, path: path.join(a1.path, 'adapter.gguf'), scale: 0 },
        { id: 1, path: path.join(a2.path, 'adapter.gguf'), scale: 1 },
      ];
      const dispose = attachPublishers(core, () => {});
      await core.call('rollback', {}, 'test');
      const published = () => core.store.adapters.list(modelDir).find((x) => x.version === 1)!.publish.llamaServer;
      for (let i = 0; i < 200 && published() === undefined; i++) await new Promise((r) => setTimeout(r, 20));
      dispose();
      expect(adapters.map((x) => x.scale)).toEqual([1, 0]);
      expect(core.store.adapters.list(modelDir).find((x) => x.version === 1)!.publish.llamaServer).toMatchObject({ ok: true });
      // After the scales, every slot is erased, so no prompt reuses KV computed under the old version.
      const after = server.seen.slice(server.seen.findLastIndex((x) => x.method === 'POST' && x.url === '/lora-adapters'));
      expect(after.filter((x) => x.method === 'POST').map((x) => x.url)).toEqual(['/lora-adapters', '/slots/0?action=erase', '/slots/1?action=erase']);
    } finally {
      await server.close();
    }
  });

  it('a disabled target is not called, and a failed publish leaves the active version active', async () => {
    addVersion(1, 'active');
    await core.call('setSettings', { values: { 'publish.vllm': { enabled: true, url: 'http://127.0.0.1:9', name: 'rein', apiKey: null, maxLoraRank: 16 } } }, 'test');
    const out = await publishActive(core, { timeoutMs: 2_000 });
    expect(Object.keys(out)).toEqual(['vllm']);
    expect(out.vllm!.ok).toBe(false);
    expect(out.vllm!.message).toMatch(/failed/);
    expect(core.store.adapters.active(modelDir)!.version).toBe(1);
  });

  it('LM Studio: a merged GGUF that llama.cpp loads and that equals the base with the GGUF LoRA applied', async () => {
    const a = addVersion(1, 'active');
    const lm = path.join(root, 'lmstudio');
    await core.call('setSettings', { values: { 'publish.lmStudio': { enabled: true, modelsDir: lm } } }, 'test');
    const out = await publishActive(core);
    expect(out.lmStudio).toMatchObject({ ok: true, model: 'rein/tiny-rein-v1' });
    const merged = path.join(lm, 'rein', 'tiny-rein-v1', 'tiny-rein-v1.gguf');
    const base = path.join(root, 'base.gguf');
    hfToGguf(modelDir, base);
    const lora = ensureGgufLora(a, modelDir);
    const tokens = [1, 100, 2000, 30000, 7];
    const m = await LlamaCppReferee.open(merged, { contextSize: 16 });
    const b = await LlamaCppReferee.open(base, { contextSize: 16 });
    try {
      const fused = await m.logits(tokens);
      const withLora = await b.logits(tokens, { lora });
      const plain = await b.logits(tokens);
      let diff = 0;
      let moved = 0;
      for (let t = 0; t < tokens.length; t++) {
        for (let v = 0; v < fused[t]!.length; v++) {
          diff = Math.max(diff, Math.abs(fused[t]![v]! - withLora[t]![v]!));
          moved = Math.max(moved, Math.abs(fused[t]![v]! - plain[t]![v]!));
        }
      }
      // fp32 sums in a different order: merged weights vs base + scale·B·(A·x).
      expect(diff).toBeLessThan(1e-3);
      // The adapter does change the logits, so the equality above is not a comparison of two base models.
      expect(moved).toBeGreaterThan(10 * diff);
    } finally {
      await m.close();
      await b.close();
    }
  }, 120_000);
});

describe('publishing to a server that misbehaves (issue #19 item 5)', () => {
  it('one that never answers fails in bounded time, one that answers without end is cut at 1 MiB; the active version stays', async () => {
    let mode: 'silent' | 'endless' = 'silent';
    const server = createServer((req, res) => {
      req.resume();
      // 'silent' never answers; 'endless' sends a body that never ends, as fast as it is read.
      if (mode !== 'endless') return;
      res.writeHead(200, { 'content-type': 'application/json' });
      const piece = Buffer.from('x'.repeat(64 * 1024));
      const pump = (): void => {
        while (!res.destroyed) if (!res.write(piece)) return void res.once('drain', pump);
      };
      pump();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      addVersion(1, 'active');
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      await core.call('setSettings', { values: { 'publish.vllm': { enabled: true, url, name: 'rein', apiKey: null, maxLoraRank: 16 } } }, 'test');
      let t0 = performance.now();
      const silent = await publishActive(core, { timeoutMs: 1_500 });
      const silentMs = performance.now() - t0;
      mode = 'endless';
      t0 = performance.now();
      const endless = await publishActive(core, { timeoutMs: 60_000 });
      const endlessMs = performance.now() - t0;
      console.log(`publish to a silent vLLM: ${silentMs.toFixed(0)} ms, ${silent.vllm!.message}; to an endless one: ${endlessMs.toFixed(0)} ms, ${endless.vllm!.message}`);
      expect(silent.vllm!.ok).toBe(false);
      expect(silent.vllm!.message).toMatch(/failed: .*(timeout|aborted)/i);
      expect(silentMs).toBeLessThan(5_000);
      expect(endless.vllm!.ok).toBe(false);
      expect(endless.vllm!.message).toMatch(/passed 1 MiB/);
      expect(endlessMs).toBeLessThan(30_000);
      expect(core.store.adapters.active(modelDir)!.version).toBe(1);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
