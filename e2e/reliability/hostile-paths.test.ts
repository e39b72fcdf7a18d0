// Issue #21 item 7: paths a request names that are not ordinary files (/dev/zero, a FIFO) and a config.json with
// num_hidden_layers 2e9, against the real capture server, hook routes and SQLite core. Each gets a clear error in
// bounded time and /api/health keeps answering.
import { execFileSync, spawn } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { composeCore as createCore } from '../../src-main/node/compose.ts';
import type { ReinCore } from '../../src-main/node/core/core.ts';
import { resolveHome } from '../../src-main/node/home.ts';
import { createHookRoutes } from '../../src-main/node/integrations/index.ts';
import { memoryLog } from '../../src-main/node/integrations/shared/log.ts';
import { startCaptureServer, type CaptureServer } from '../../src-main/node/capture-server/server.ts';

const TOKEN = 'ab'.repeat(32);
const root = mkdtempSync(path.join(tmpdir(), 'rein-rel-paths-'));
const fifo = path.join(root, 'pipe.jsonl');
let core: ReinCore;
let server: CaptureServer;
const hookLog = memoryLog();

beforeAll(async () => {
  execFileSync('mkfifo', [fifo]);
  core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'home') }) });
  server = await startCaptureServer({ core, token: TOKEN, port: 0, rateLimitPerMinute: 10_000, version: 't', log: () => {}, hooks: createHookRoutes(core, hookLog) });
});
afterAll(async () => {
  await server?.close();
  core?.close();
  rmSync(root, { recursive: true, force: true });
});

const post = (route: string, body: unknown) =>
  fetch(`${server.url}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(20_000),
  });

/** A writer that opens the FIFO after 3 s, so that a reader blocked on it (the server, in this very process, before
 *  the fix) comes back and the test fails on time instead of hanging the runner. Killed after the probe. */
function unblockLater(file: string): () => void {
  const child = spawn('sh', ['-c', `sleep 3; : > '${file}'`], { stdio: 'ignore' });
  return () => child.kill('SIGKILL');
}

/** The request's answer and time, and whether /api/health answered within 2 s right after. */
async function probe(route: string, body: unknown): Promise<{ status: number; text: string; ms: number; healthy: boolean }> {
  const t0 = performance.now();
  const r = await post(route, body);
  const text = await r.text();
  const ms = performance.now() - t0;
  const h = await fetch(`${server.url}api/health`, { signal: AbortSignal.timeout(2000) });
  return { status: r.status, text, ms, healthy: h.ok };
}

describe('hostile local paths (issue #21 item 7)', () => {
  it('importData of /dev/zero and of a FIFO: a clear 400, fast, server responsive', async () => {
    for (const p of ['/dev/zero', fifo]) {
      const stop = unblockLater(fifo);
      const r = await probe('api/importData', { path: p }).finally(stop);
      console.log(`importData ${p}: ${r.status} in ${r.ms.toFixed(0)} ms, health ${r.healthy}: ${r.text.slice(0, 160)}`);
      expect(r.status).toBe(400);
      expect(r.text).toMatch(/not a regular file/);
      expect(r.ms).toBeLessThan(2000);
      expect(r.healthy).toBe(true);
    }
  });

  it('useModel on a folder whose config.json is a FIFO: a clear refusal, server responsive', async () => {
    const dir = path.join(root, 'fifo-model');
    mkdirSync(dir);
    execFileSync('mkfifo', [path.join(dir, 'config.json')]);
    const stop = unblockLater(path.join(dir, 'config.json'));
    const r = await probe('api/useModel', { path: dir }).finally(stop);
    console.log(`useModel with a FIFO config.json: ${r.status} in ${r.ms.toFixed(0)} ms, health ${r.healthy}: ${r.text.slice(0, 200)}`);
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(r.text).toMatch(/not a regular file/);
    expect(r.ms).toBeLessThan(2000);
    expect(r.healthy).toBe(true);
  });

  it('a Claude Stop whose transcript_path is a FIFO answers and the server stays responsive', async () => {
    const stop = unblockLater(fifo);
    const r = await probe('hooks/claude', { hook_event_name: 'Stop', session_id: 's', prompt_id: 'p', transcript_path: fifo, last_assistant_message: 'a' }).finally(stop);
    const warned = hookLog.lines.some((l) => JSON.stringify(l).includes('not a regular file'));
    console.log(`Claude Stop with a FIFO transcript: ${r.status} in ${r.ms.toFixed(0)} ms, health ${r.healthy}, logged "not a regular file": ${warned}`);
    expect(r.ms).toBeLessThan(2000);
    expect(r.healthy).toBe(true);
    expect(warned).toBe(true);
  });

  it('num_hidden_layers 2000000000 is refused by name, fast', async () => {
    const dir = path.join(root, 'huge-model');
    mkdirSync(dir);
    writeFileSync(
      path.join(dir, 'config.json'),
      JSON.stringify({ architectures: ['LlamaForCausalLM'], vocab_size: 32, hidden_size: 8, intermediate_size: 16, num_hidden_layers: 2_000_000_000, num_attention_heads: 2, rms_norm_eps: 1e-5 }),
    );
    writeFileSync(path.join(dir, 'model.safetensors'), '');
    writeFileSync(path.join(dir, 'tokenizer.json'), '{}');
    const r = await probe('api/useModel', { path: dir });
    console.log(`useModel with num_hidden_layers 2e9: ${r.status} in ${r.ms.toFixed(0)} ms, health ${r.healthy}: ${r.text.slice(0, 200)}`);
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(r.text).toMatch(/num_hidden_layers/);
    expect(r.ms).toBeLessThan(2000);
    expect(r.healthy).toBe(true);
  });
});

// exportData renamed its temporary file over whatever the path named: a FIFO became a regular file, and as root a
// device node was replaced (the probe lost /dev/null). The target must be a regular file or nothing; a symlink is
// neither followed nor replaced. Every path here is inside this test's temp folder: the device case is a link in it
// that points at /dev/null, and the test checks /dev/null is still the character device it was.
describe('exportData onto a path that is not a regular file', () => {
  it('a FIFO: refused by name, the FIFO still a FIFO, nothing read or written', async () => {
    const target = path.join(root, 'export-fifo');
    execFileSync('mkfifo', [target]);
    const r = await probe('api/exportData', { path: target });
    const st = lstatSync(target);
    console.log(`exportData onto a FIFO: ${r.status} in ${r.ms.toFixed(0)} ms; still a FIFO: ${st.isFIFO()}: ${r.text.slice(0, 200)}`);
    expect(r.status).toBe(400);
    expect(r.text).toMatch(/is a FIFO, not a regular file/);
    expect(st.isFIFO()).toBe(true);
    expect(readdirSync(root).filter((n) => n.startsWith('.export-fifo'))).toEqual([]);
  });

  it('a symlink to /dev/null: refused, the link untouched, /dev/null still a character device', async () => {
    const nullBefore = statSync('/dev/null');
    const target = path.join(root, 'export-devnull');
    symlinkSync('/dev/null', target);
    const r = await probe('api/exportData', { path: target });
    const link = lstatSync(target);
    const nullAfter = statSync('/dev/null');
    console.log(`exportData onto a link to /dev/null: ${r.status}; link kept: ${link.isSymbolicLink() && readlinkSync(target) === '/dev/null'}; /dev/null a character device: ${nullAfter.isCharacterDevice()}: ${r.text.slice(0, 200)}`);
    expect(r.status).toBe(400);
    expect(r.text).toMatch(/is a symbolic link/);
    expect(link.isSymbolicLink()).toBe(true);
    expect(readlinkSync(target)).toBe('/dev/null');
    expect(nullAfter.isCharacterDevice()).toBe(true);
    expect([nullAfter.ino, nullAfter.rdev]).toEqual([nullBefore.ino, nullBefore.rdev]);
  });

  it('a symlink to a regular file: refused, the file it names keeps its bytes', async () => {
    const victim = path.join(root, 'victim.txt');
    writeFileSync(victim, 'keep me\n');
    const target = path.join(root, 'export-link');
    symlinkSync(victim, target);
    const r = await probe('api/exportData', { path: target });
    console.log(`exportData onto a link to a file: ${r.status}: ${r.text.slice(0, 200)}`);
    expect(r.status).toBe(400);
    expect(lstatSync(target).isSymbolicLink()).toBe(true);
    expect(readFileSync(victim, 'utf8')).toBe('keep me\n');
  });

  it('a regular file is still replaced whole, and a new path still created', async () => {
    const target = path.join(root, 'export.jsonl');
    writeFileSync(target, 'old\n');
    const r = await probe('api/exportData', { path: target });
    expect(r.status).toBe(200);
    expect(readFileSync(target, 'utf8')).toMatch(/^\{"type":"header"/);
    const fresh = await probe('api/exportData', { path: path.join(root, 'fresh.jsonl') });
    expect(fresh.status).toBe(200);
  });
});
