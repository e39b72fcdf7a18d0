// Publishing against a real llama-server, built from the llama.cpp source node-llama-cpp bundles (the commit its
// binaries and Rein's parity tests use) by scripts/build-llama-server.sh, which .ci/run calls before the tests.
// The server is started with exactly the arguments Rein's publisher writes (serving/llama-server.args), the versions
// are switched the way Rein switches them (rollback → publishActive), and right after each switch the next-token
// log-probabilities it serves for a prompt whose prefix it cached under the previous version must equal Rein's engine
// with the newly selected version. The endpoints, from the bundled tools/server: POST /completion with a token-id
// prompt, n_probs and cache_prompt (server-context.cpp populate_token_probs: the full-vocabulary softmax, not
// post-sampling; server-task.cpp probs_vector_to_json: completion_probabilities[0].top_logprobs [{id, logprob}]).
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromBase, loraSpec } from '../../common/engine/lora.ts';
import { modelLinearParams } from '../../common/engine/families/registry.ts';
import { Rng } from '../../common/engine/rng.ts';
import { createCore } from '../core/core.ts';
import type { ReinCore } from '../core/core.ts';
import { Engine } from '../engine/engine.ts';
import { hfToGguf } from '../engine/gguf/convert.ts';
import { loadPeftAdapter, savePeftAdapter } from '../engine/peft.ts';
import type { LoraAdapter } from '../../common/engine/lora.ts';
import { writeTinyModel } from '../engine/tiny.ts';
import { resolveHome } from '../home.ts';
import { publishActive } from './publish.ts';

const REPO = path.resolve(import.meta.dirname, '../../..');
const BUNDLE = path.join(REPO, 'node_modules/node-llama-cpp/llama/gitRelease.bundle');

/** Where scripts/build-llama-server.sh puts the binary for the bundled commit (same cache rule as the script). */
function llamaServerBin(): string | null {
  if (process.env.REIN_LLAMA_SERVER) return process.env.REIN_LLAMA_SERVER;
  if (!existsSync(BUNDLE)) return null;
  const commit = execFileSync('git', ['bundle', 'list-heads', BUNDLE], { encoding: 'utf8' }).split(/\s/)[0]!;
  const cache = process.env.REIN_LLAMA_SERVER_CACHE ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(homedir(), '.cache'), 'rein', 'llama-server');
  const bin = path.join(cache, commit, 'bin', 'llama-server');
  return existsSync(bin) ? bin : null;
}

const BIN = llamaServerBin();
// The same bound as the llama.cpp logits parity (engine/test-utils/parity.ts TOL): fp32 on both sides, different
// summation orders; a wrong version or stale KV moves log p by 1e-2 or more (checked below).
const TOL = 1e-4;
const K = 8;

describe.skipIf(BIN === null)(`publishing to a real llama-server${BIN === null ? ' (skipped: no llama-server binary; run scripts/build-llama-server.sh, which .ci/run does)' : ''}`, () => {
  let root: string;
  let modelDir: string;
  let core: ReinCore;
  let engine: Engine;
  let server: ChildProcess | null = null;
  let log = '';
  const port = 20_000 + (process.pid % 20_000);
  const url = `http://127.0.0.1:${port}`;
  const adapters = new Map<number, LoraAdapter>();

  beforeAll(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'rein-llama-server-'));
    modelDir = path.join(root, 'tiny');
    writeTinyModel(modelDir, { arch: 'qwen2', layers: 1, hidden: 32, heads: 2, kvHeads: 1, intermediate: 64 });
    engine = Engine.load(modelDir, { threads: 1, buckets: [16, 32] });
    core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'home') }) });
    await core.call('setSettings', { values: { 'model.active': modelDir } }, 'test');
    for (const version of [1, 2]) {
      const a = fromBase(modelLinearParams(engine.config), loraSpec({ r: 4, alpha: 8 }), version);
      const rng = new Rng(100 + version);
      for (const p of a.pairs) for (let i = 0; i < p.b.length; i++) p.b[i] = 0.05 * rng.normal();
      const dir = path.join(root, 'home', 'adapters', `v${version}`);
      savePeftAdapter(path.join(dir, 'peft'), a, { baseModel: modelDir });
      core.store.adapters.insert({ modelId: modelDir, version, status: version === 2 ? 'active' : 'inactive', path: dir }, 'test');
      // Our side reads each version back from its PEFT files, as the GGUF LoRA the server loads was made from them.
      adapters.set(version, loadPeftAdapter(path.join(dir, 'peft'), modelLinearParams(engine.config)).adapter);
    }
    await core.call('setSettings', { values: { 'publish.llamaServer': { enabled: true, url } } }, 'test');
    // Nothing listens yet: the publish writes the launch arguments and says it could not reach the server.
    const first = await publishActive(core, { timeoutMs: 2_000 });
    expect(first.llamaServer!.ok).toBe(false);
    const base = path.join(root, 'base.gguf');
    hfToGguf(modelDir, base);
    const args = readFileSync(path.join(root, 'home', 'serving', 'llama-server.args'), 'utf8').trim();
    // The args file is shell words, as a user pastes it; one slot so every request meets the same cache.
    server = spawn('sh', ['-c', `exec "$0" -m "$1" --host 127.0.0.1 --port ${port} -np 1 -c 256 -t 1 --no-warmup ${args}`, BIN!, base], { stdio: ['ignore', 'pipe', 'pipe'] });
    server.stdout!.on('data', (c: Buffer) => (log += c.toString()));
    server.stderr!.on('data', (c: Buffer) => (log += c.toString()));
    for (let i = 0; ; i++) {
      if (server.exitCode !== null) throw new Error(`llama-server exited ${server.exitCode}:\n${log.slice(-3000)}`);
      try {
        if ((await fetch(`${url}/health`)).status === 200) break;
      } catch {
        // not listening yet
      }
      if (i > 600) throw new Error(`llama-server did not become healthy:\n${log.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }, 120_000);

  afterAll(async () => {
    if (server !== null && server.exitCode === null) {
      server.kill('SIGTERM');
      await new Promise((r) => server!.once('exit', r));
    }
    core?.close();
    await engine?.close();
    rmSync(root, { recursive: true, force: true });
  });

  /** The served next-token log-probabilities after `tokens`: the top K, by id. */
  async function served(tokens: number[]): Promise<Map<number, number>> {
    const r = await fetch(`${url}/completion`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: tokens, n_predict: 1, n_probs: K, cache_prompt: true, temperature: 0 }),
    });
    expect(r.status).toBe(200);
    const body = (await r.json()) as { completion_probabilities: { top_logprobs: { id: number; logprob: number }[] }[] };
    return new Map(body.completion_probabilities[0]!.top_logprobs.map((t) => [t.id, t.logprob]));
  }

  /** max |Δ log p| between the server and Rein's engine with `version` (0: the base) over the served top K. */
  async function gap(tokens: number[], version: number): Promise<number> {
    const got = await served(tokens);
    const rows = await engine.driver.positionLogprobs(tokens, version === 0 ? null : adapters.get(version)!);
    const last = rows[rows.length - 1]!;
    let d = 0;
    for (const [id, lp] of got) d = Math.max(d, Math.abs(lp - last[id]!));
    return d;
  }

  const P = [9707, 1879, 11, 419, 374, 264, 1273, 315, 279, 3538, 6366, 13];

  it('serves the selected version right after each switch, also for a prompt cached under the previous one', async () => {
    // v2 active: selected by scale, and the prompt P is now cached in the slot under v2.
    expect((await publishActive(core)).llamaServer).toMatchObject({ ok: true });
    expect(await gap(P, 2)).toBeLessThan(TOL);
    // The versions differ enough that serving the wrong one would fail the bound.
    const rows = await engine.driver.positionLogprobs(P, adapters.get(1)!);
    const other = rows[rows.length - 1]!;
    const v2 = await served(P);
    expect(Math.max(...[...v2].map(([id, lp]) => Math.abs(lp - other[id]!)))).toBeGreaterThan(100 * TOL);

    // Switch to v1 the way Rein does; P + 3 tokens shares the prefix cached under v2.
    await core.call('rollback', { version: 1 }, 'test');
    expect((await publishActive(core)).llamaServer).toMatchObject({ ok: true, message: expect.stringMatching(/serving v1/) });
    expect(await gap([...P, 1207, 1052, 30], 1)).toBeLessThan(TOL);

    // Switch to the base: every scale 0; the prefix was just cached under v1.
    await core.call('rollback', { version: 0 }, 'test');
    expect((await publishActive(core)).llamaServer).toMatchObject({ ok: true, message: expect.stringMatching(/serving the base model/) });
    expect(await gap([...P, 1207, 1052, 30, 55], 0)).toBeLessThan(TOL);
  }, 120_000);
});
