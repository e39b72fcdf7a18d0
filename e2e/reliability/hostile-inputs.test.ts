// Issue #19 item 2: hostile local input gets a clear error, never a crash or an out-of-memory kill, against the real
// `rein serve` (hostile-paths.test.ts covers device files, FIFOs and num_hidden_layers 2e9). Here: a config.json that
// is not JSON, one of 3 GB (sparse: costs no disk), a safetensors header claiming a terabyte and a tensor claiming
// terabytes, a symlink loop named as a model folder, an import file and an export target, and a JSONL import with
// broken lines (the good ones kept, the bad ones counted). Each answers 4xx within 5 s and the server stays healthy,
// its memory bounded.
import { closeSync, lstatSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, symlinkSync, writeFileSync, ftruncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startServe } from '../harness.ts';
import type { ServeChild } from '../harness.ts';
import { figure } from './figures.ts';

let serve: ServeChild;
let root: string;
beforeAll(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'rein-hostile-'));
  serve = await startServe();
});
afterAll(async () => {
  await serve?.stop();
  rmSync(root, { recursive: true, force: true });
});

const CONFIG = { architectures: ['LlamaForCausalLM'], vocab_size: 32, hidden_size: 8, intermediate_size: 16, num_hidden_layers: 1, num_attention_heads: 2, rms_norm_eps: 1e-5 };

function modelDir(name: string, files: Record<string, string | Buffer>): string {
  const dir = path.join(root, name);
  mkdirSync(dir, { recursive: true });
  for (const [f, body] of Object.entries(files)) writeFileSync(path.join(dir, f), body);
  return dir;
}

/** A safetensors file: u64 header length, the header, then `data` bytes (huggingface/safetensors, "Format"). */
function safetensors(headerLen: bigint | null, header: string, data = 0): Buffer {
  const h = Buffer.from(header);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(headerLen ?? BigInt(h.length));
  return Buffer.concat([len, h, Buffer.alloc(data)]);
}

function rssKb(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
}

async function probe(verb: string, input: unknown): Promise<{ status: number; text: string; ms: number; healthy: boolean }> {
  const t0 = performance.now();
  const r = await fetch(new URL(`/api/${verb}`, serve.url), {
    method: 'POST',
    headers: { authorization: `Bearer ${serve.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(input),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await r.text();
  const ms = performance.now() - t0;
  const h = await fetch(new URL('/api/health', serve.url), { signal: AbortSignal.timeout(2000) });
  return { status: r.status, text, ms, healthy: h.ok };
}

test('hostile model folders: clear 4xx errors, fast, with bounded memory', async () => {
  const huge = modelDir('huge-config', { 'model.safetensors': '', 'tokenizer.json': '{}' });
  const fd = openSync(path.join(huge, 'config.json'), 'w');
  ftruncateSync(fd, 3 * 1024 ** 3);
  closeSync(fd);
  const tb = 2n ** 40n;
  const cases: [string, string, RegExp][] = [
    ['config.json not JSON', modelDir('bad-config', { 'config.json': '{"architectures": ["LlamaForCausalLM"], vocab_size: ', 'model.safetensors': '', 'tokenizer.json': '{}' }), /config\.json/],
    ['config.json a JSON array', modelDir('array-config', { 'config.json': '[1,2,3]', 'model.safetensors': '', 'tokenizer.json': '{}' }), /config\.json/],
    ['config.json of 3 GB', huge, /config\.json/],
    ['safetensors header claiming 1 TB', modelDir('tb-header', { 'config.json': JSON.stringify(CONFIG), 'model.safetensors': safetensors(tb, '{}'), 'tokenizer.json': '{}' }), /header/],
    [
      'safetensors tensor claiming 4 TB',
      modelDir('tb-tensor', {
        'config.json': JSON.stringify(CONFIG),
        'model.safetensors': safetensors(null, JSON.stringify({ 'model.embed_tokens.weight': { dtype: 'F32', shape: [1 << 20, 1 << 20], data_offsets: [0, 4 * 2 ** 40] } }), 16),
        'tokenizer.json': '{}',
      }),
      /safetensors|offset|past the end|bytes/i,
    ],
    ['a symlink loop as the folder', (() => {
      const a = path.join(root, 'loop-a');
      symlinkSync(path.join(root, 'loop-b'), a);
      symlinkSync(a, path.join(root, 'loop-b'));
      return a;
    })(), /loop|symbolic|not a|no such|ELOOP|cannot/i],
  ];
  const rss0 = rssKb(serve.pid);
  const rows: string[] = [];
  const failures: string[] = [];
  for (const [label, dir, want] of cases) {
    const r = await probe('useModel', { path: dir });
    const rss = rssKb(serve.pid);
    rows.push(`${label}: ${r.status} in ${r.ms.toFixed(0)} ms, RSS ${(rss / 1024).toFixed(0)} MB: ${r.text.slice(0, 160)}`);
    if (!(r.status >= 400 && r.status < 500 && want.test(r.text) && r.ms < 5000 && r.healthy)) failures.push(label);
  }
  const discover = await probe('discoverModels', { folders: [root] });
  const peak = rssKb(serve.pid);
  console.log(`hostile model folders (RSS before ${(rss0 / 1024).toFixed(0)} MB, after ${(peak / 1024).toFixed(0)} MB):\n  ${rows.join('\n  ')}\n  discoverModels over all of them: ${discover.status} in ${discover.ms.toFixed(0)} ms: ${discover.text.slice(0, 200)}`);
  figure(`hostile model folders: ${cases.length - failures.length}/${cases.length} refused with a clear 4xx in < 5 s, RSS +${((peak - rss0) / 1024).toFixed(0)} MB`);
  expect(failures).toEqual([]);
  expect(discover.status).toBe(200);
  expect(discover.healthy).toBe(true);
  expect(peak - rss0).toBeLessThan(500 * 1024);
  expect(serve.alive()).toBe(true);
});

test('import and export paths through a symlink loop: a clear 400, fast', async () => {
  const loop = path.join(root, 'io-loop');
  symlinkSync(loop, loop);
  const rows: string[] = [];
  const bad: string[] = [];
  for (const [verb, p] of [['importData', loop], ['exportData', path.join(loop, 'out.jsonl')]] as const) {
    const r = await probe(verb, { path: p });
    rows.push(`${verb} ${path.basename(p)}: ${r.status} in ${r.ms.toFixed(0)} ms: ${r.text.slice(0, 160)}`);
    if (!(r.status >= 400 && r.status < 500 && r.ms < 5000 && r.healthy)) bad.push(`${verb} ${p}`);
  }
  // An export onto the looping link itself is refused as every export onto a link is (writeFileAtomic: Rein neither
  // writes through a link nor replaces it), fast, and the link stays as it was.
  const onto = await probe('exportData', { path: loop });
  const st = lstatSync(loop);
  rows.push(`exportData onto the link: ${onto.status} in ${onto.ms.toFixed(0)} ms, now a ${st.isFile() ? 'regular file' : st.isSymbolicLink() ? 'symlink' : 'other'}`);
  console.log(`symlink loop paths:\n  ${rows.join('\n  ')}`);
  expect(bad).toEqual([]);
  expect(onto.status).toBe(400);
  expect(onto.text).toMatch(/is a symbolic link, not a regular file/);
  expect(onto.ms).toBeLessThan(5000);
  expect(st.isSymbolicLink()).toBe(true);
});

test('a JSONL import with broken lines keeps every good line and counts the bad ones', async () => {
  // A real export of 3 turns and 2 ratings, then damaged: garbage, a truncated record, wrong types, a NUL line,
  // a record of an unknown type, an empty line, and a line of 2 MB.
  for (let i = 0; i < 3; i++) await serve.call('captureTurn', { source: 'api', eventId: `imp-${i}`, prompt: `p${i}`, response: `r${i}` });
  const turns = (await serve.call('listTurns', {})).items;
  await serve.call('rate', { turnId: turns[0]!.id, value: 'good' });
  await serve.call('rate', { turnId: turns[1]!.id, value: 'bad' });
  const file = path.join(root, 'export.jsonl');
  await serve.call('exportData', { path: file });
  const good = readFileSync(file, 'utf8').trim().split('\n');
  const badLines = [
    'this is not json',
    good[1]!.slice(0, Math.floor(good[1]!.length / 2)),
    JSON.stringify({ type: 'turn', id: 'seven', source: 42, prompt: null }),
    '\u0000\u0000\u0000',
    JSON.stringify({ type: 'spaceship', id: 1 }),
    '{"type":"rating","id":1e999}',
    '[' + '"x",'.repeat(500_000) + '"x"]',
  ];
  const damaged = [good[0]!, badLines[0]!, ...good.slice(1, 3), badLines[1]!, badLines[2]!, '', ...good.slice(3), ...badLines.slice(3)].join('\n') + '\n';
  writeFileSync(file, damaged);
  // Into a fresh home, so every good record is new there.
  const other = await startServe();
  try {
    const t0 = performance.now();
    const r = await fetch(new URL('/api/importData', other.url), {
      method: 'POST',
      headers: { authorization: `Bearer ${other.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ path: file }),
    });
    const body = (await r.json()) as { turns?: number; ratings?: number; skipped?: number; bad?: number; error?: unknown };
    const ms = performance.now() - t0;
    const stored = await other.call('listTurns', {});
    const ratings = await other.call('listRatings', { includeUndone: true });
    console.log(`import of ${good.length - 1} good records with ${badLines.length} broken lines: ${r.status} in ${ms.toFixed(0)} ms ${JSON.stringify(body).slice(0, 300)}; stored ${stored.total} turns, ${ratings.items.length} ratings`);
    expect(r.status).toBe(200);
    expect(stored.total).toBe(3);
    expect(ratings.items).toHaveLength(2);
    expect(body.turns).toBe(3);
    expect(body.ratings).toBe(2);
    // The count of bad lines is shown (the empty line is not a record).
    expect(body.bad).toBe(badLines.length);
  } finally {
    await other.stop();
  }
});
