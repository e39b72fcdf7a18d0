// The wizard's verbs through the real core and, for the test turn, the real capture server (runServe on port 0),
// against a temp HOME that holds a Hugging Face cache, a picked folder, Ollama manifests and agent configs.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { composeCore } from '../compose.ts';
import type { ReinCore } from '../core/core.ts';
import { resolveHome } from '../home.ts';
import { runServe } from '../headless.ts';
import { installSmallLm } from '../demo/small-lm.ts';
import { SMALL_LM_DIR } from '../demo/small-lm.ts';
import { linuxGpus } from './hardware.ts';

let root: string;
let core: ReinCore | null;
const saved = { HOME: process.env.HOME, PATH: process.env.PATH, HF_HUB_CACHE: process.env.HF_HUB_CACHE, HF_HOME: process.env.HF_HOME };

beforeEach(() => {
  root = mkdtempSync(path.join(tmpdir(), 'rein-system-'));
  // The verbs read process.env (as the app does); point it at the temp tree.
  process.env.HOME = path.join(root, 'user');
  process.env.PATH = path.join(root, 'bin');
  delete process.env.HF_HUB_CACHE;
  delete process.env.HF_HOME;
  mkdirSync(process.env.HOME, { recursive: true });
  core = null;
});
afterEach(() => {
  core?.close();
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  rmSync(root, { recursive: true, force: true });
});

const newCore = () => (core = composeCore({ home: resolveHome({ REIN_HOME: path.join(root, 'rein') }) }));

describe('model discovery', () => {
  it('finds HF cache models at refs/main, picked folders and Ollama tags, and says why one cannot be trained', async () => {
    const home = process.env.HOME!;
    const repo = path.join(home, '.cache/huggingface/hub/models--acme--tiny');
    installSmallLm(path.join(repo, 'snapshots/abc123'));
    mkdirSync(path.join(repo, 'refs'), { recursive: true });
    writeFileSync(path.join(repo, 'refs/main'), 'abc123\n');
    const picked = path.join(root, 'picked');
    mkdirSync(path.join(picked, 'bert'), { recursive: true });
    writeFileSync(path.join(picked, 'bert/config.json'), JSON.stringify({ architectures: ['BertModel'], model_type: 'bert' }));
    mkdirSync(path.join(home, '.ollama/models/manifests/registry.ollama.ai/library/qwen3'), { recursive: true });
    writeFileSync(path.join(home, '.ollama/models/manifests/registry.ollama.ai/library/qwen3/8b'), '{}');

    const models = await newCore().call('discoverModels', { folders: [picked] }, 'test');
    const byName = Object.fromEntries(models.map((m) => [m.name, m]));
    expect(byName['acme/tiny']).toMatchObject({ source: 'hf-cache', arch: 'LlamaForCausalLM', trainable: true, why: null });
    expect(byName['acme/tiny']!.params).toBeGreaterThan(10_000);
    expect(byName['bert']).toMatchObject({ source: 'folder', trainable: false });
    expect(byName['bert']!.why).toMatch(/not supported/);
    expect(byName['qwen3:8b']).toMatchObject({ source: 'ollama', trainable: false });
    // A manifest with no layers (written by hand here) is named as such; model-discovery.test.ts follows real ones to their blobs.
    expect(byName['qwen3:8b']!.why).toMatch(/qwen3\/8b has no layers list/);
  });

  it('discoverModels names a folder that is not there, a file, or a relative path, instead of answering the same list', async () => {
    const c = newCore();
    const missing = path.join(root, 'no-such-models');
    await expect(c.call('discoverModels', { folders: [missing] }, 'test')).rejects.toMatchObject({ code: 'bad_input', field: 'folders', message: `discoverModels: there is no folder at ${missing}` });
    const file = path.join(root, 'a-file');
    writeFileSync(file, 'x');
    await expect(c.call('discoverModels', { folders: [file] }, 'test')).rejects.toMatchObject({ message: `discoverModels: ${file} is a file, not a folder` });
    await expect(c.call('discoverModels', { folders: ['models'] }, 'test')).rejects.toMatchObject({ message: 'discoverModels: models is not an absolute path (start it with / or ~/)' });
    // ~/ is the user's home.
    mkdirSync(path.join(process.env.HOME!, 'picked-in-home', 'tiny'), { recursive: true });
    installSmallLm(path.join(process.env.HOME!, 'picked-in-home', 'tiny'));
    const found = await c.call('discoverModels', { folders: ['~/picked-in-home'] }, 'test');
    expect(found.find((m) => m.name === 'tiny')).toMatchObject({ source: 'folder', path: path.join(process.env.HOME!, 'picked-in-home', 'tiny') });
  });

  it('useModel refuses a folder it cannot train, naming the reason, and changes no setting', async () => {
    const c = newCore();
    const bad = path.join(root, 'bad');
    mkdirSync(bad);
    await expect(c.call('useModel', { path: bad }, 'test')).rejects.toMatchObject({ code: 'bad_input', field: 'path' });
    expect(c.settings()['model.active']).toBeNull();
  });

  it('useDemoModel writes the demo model once, makes it active with the balanced preset (as rein demo), and status says so', async () => {
    const c = newCore();
    // Before any model: the presets say which verb cannot run and how to set a model up (commands that exist).
    const none = await c.call('describePresets', {}, 'test').then(() => null, (e: unknown) => e as { code: string; message: string });
    expect(none?.code).toBe('not_available');
    expect(none?.message).toMatch(/^describePresets is not available yet: no model is set up: .*`rein model list` .* `rein model use <id>` .*`rein model add <path-or-ollama:name:tag>`.*; `rein model use demo` uses the small demo model/);
    const r = await c.call('useDemoModel', {}, 'test');
    expect(r.model).toMatchObject({ source: 'demo', trainable: true });
    expect(r.settings['model.active']).toBe(r.model.path);
    expect(r.settings['training.preset']).toBe('balanced');
    expect(c.status().model).toEqual({ id: r.model.path, configured: true });
    const before = readFileSync(path.join(r.model.path, 'model.safetensors'));
    // The committed, pretrained small LM (servable: byte-level BPE), not random weights.
    expect(before.equals(readFileSync(path.join(SMALL_LM_DIR, 'model.safetensors')))).toBe(true);
    await c.call('useDemoModel', {}, 'test');
    expect(readFileSync(path.join(r.model.path, 'model.safetensors')).equals(before)).toBe(true);
    // The presets resolve for it: training can start from here.
    const table = await c.call('describePresets', {}, 'test');
    expect(table.bucket).toBe('tiny');
    expect(table.presets.balanced.ratioClipHigh).toBe(2);
  });
});

describe('agents', () => {
  it('detects an installed agent, shows the dry run, connects it with a backup, then reports it connected', async () => {
    const home = process.env.HOME!;
    mkdirSync(path.join(home, '.claude'), { recursive: true });
    writeFileSync(path.join(home, '.claude/settings.json'), JSON.stringify({ theme: 'dark' }));
    const c = newCore();
    const agents = await c.call('detectAgents', {}, 'test');
    expect(agents.map((a) => a.agent)).toEqual(['claude', 'codex', 'openclaw']);
    expect(agents[0]).toMatchObject({ name: 'Claude Code', installed: true, connected: false, error: null });
    expect(agents[1]).toMatchObject({ installed: false });

    const plan = await c.call('planAgent', { agent: 'claude' }, 'test');
    const settingsChange = plan.changes.find((x) => x.path === path.join(home, '.claude/settings.json'));
    expect(settingsChange).toMatchObject({ action: 'modify' });
    // A dry run writes nothing.
    expect(JSON.parse(readFileSync(path.join(home, '.claude/settings.json'), 'utf8'))).toEqual({ theme: 'dark' });

    const done = await c.call('connectAgent', { agent: 'claude' }, 'test');
    expect(done.changes.map((x) => x.path)).toEqual(plan.changes.map((x) => x.path));
    expect(done.backupDir).not.toBeNull();
    expect(existsSync(done.backupDir!)).toBe(true);
    expect(JSON.parse(readFileSync(path.join(home, '.claude/settings.json'), 'utf8')).theme).toBe('dark');
    expect((await c.call('detectAgents', {}, 'test'))[0]!.connected).toBe(true);
    await expect(c.call('planAgent', { agent: 'nope' as never }, 'test')).rejects.toMatchObject({ code: 'bad_input', field: 'agent' });
  });

  it("connects Codex on the local model: a responses provider on the proxy's port, and it reports connected", async () => {
    const home = process.env.HOME!;
    mkdirSync(path.join(home, '.codex'), { recursive: true });
    const c = newCore();
    await c.call('setSettings', { values: { 'proxy.port': 7999, 'proxy.baseModelName': 'my-qwen' } }, 'test');
    const plan = await c.call('planAgent', { agent: 'codex', localModel: true }, 'test');
    expect(plan.changes.find((x) => x.path.endsWith('config.toml'))!.summary).toContain('127.0.0.1:7999 (my-qwen, wire_api = "responses")');
    const done = await c.call('connectAgent', { agent: 'codex', localModel: true }, 'test');
    expect(readFileSync(path.join(home, '.codex/config.toml'), 'utf8')).toContain('base_url = "http://127.0.0.1:7999/v1"');
    // As `rein setup codex --local-model`: Rein's model server gets a context that holds Codex's prompt.
    expect(c.settings()['serving.contextSize']).toBe(32768);
    expect(done.notes).toContain("serving.contextSize 4096 → 32768: Codex's first request (system prompt and tools) is about 11.8k tokens.");
    expect((await c.call('detectAgents', {}, 'test'))[1]!.connected).toBe(true);
    await expect(c.call('planAgent', { agent: 'openclaw', localModel: true }, 'test')).rejects.toMatchObject({ code: 'bad_input' });
  });
});

describe('hardware and the test turn', () => {
  it('reports cores, memory and the bundled CPU provider; reads GPUs from sysfs', async () => {
    const hw = await newCore().call('detectHardware', {}, 'test');
    expect(hw.cpuCores).toBeGreaterThan(0);
    expect(hw.memoryBytes).toBeGreaterThan(hw.freeMemoryBytes);
    expect(hw.providers).toContainEqual({ name: 'cpu', bundled: true });
    // What training.device auto picks: a GPU provider only with its probe passed, else the CPU saying why.
    if (hw.device.provider === 'cpu') expect(hw.device.reason).toMatch(/^no GPU provider passed its probe \(.*webgpu: /);
    else expect(hw.device.reason).toBeNull();
    const sys = path.join(root, 'sysroot');
    mkdirSync(path.join(sys, 'sys/class/drm/card0/device'), { recursive: true });
    writeFileSync(path.join(sys, 'sys/class/drm/card0/device/vendor'), '0x10de\n');
    mkdirSync(path.join(sys, 'sys/class/drm/card0-HDMI-A-1'), { recursive: true });
    expect(linuxGpus(sys)).toEqual([{ vendor: 'NVIDIA', evidence: path.join(sys, 'sys/class/drm/card0/device/vendor') }]);
  });

  it('sendTestTurn needs a running capture server, then posts through it and the turn is stored', async () => {
    const c = newCore();
    await expect(c.call('sendTestTurn', {}, 'test')).rejects.toMatchObject({ code: 'not_available' });
    c.close();
    core = null;
    const serving = await runServe({ home: resolveHome({ REIN_HOME: path.join(root, 'rein') }), port: 0, log: () => {}, handleSignals: false, rendererDir: null });
    try {
      const seen: number[] = [];
      const off = serving.core.on('turnCaptured', (t) => seen.push(t.id));
      const r = await serving.core.call('sendTestTurn', {}, 'test');
      off();
      expect(r.url).toBe(`${serving.url}v1/turns`);
      expect(seen).toEqual([r.turnId]);
      expect((await serving.core.call('getTurn', { turnId: r.turnId }, 'test')).source).toBe('api');
    } finally {
      await serving.close();
    }
  });
});
