// Capture proxy overhead: the same chat requests sent to a bare OpenAI-compatible upstream and through the proxy (with
// the real SQLite core storing every turn), in alternating blocks, because the second vCPU here is often busy with
// other work. Reported: added latency per request (non-streaming; the client with and without logprobs, the second
// being the path where the proxy rewrites the reply), and added time to first token and per streamed token.
// Targets: < 2 ms per request, no added per-token delay. Usage: node bench/proxy.ts [--requests 300 --streams 16]
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { Agent, request } from 'node:http';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createCore } from '../src-main/node/core/core.ts';
import { resolveHome } from '../src-main/node/home.ts';
import { tokenizerSourceDir } from '../src-main/node/engine/tiny.ts';
import { loadTokenizer } from '../src-main/node/engine/tokenizer.ts';
import { producerResolver } from '../src-main/node/serving/producer.ts';
import { startProxyServer } from '../src-main/node/serving/proxy.ts';
import { startFakeUpstream } from '../src-main/node/serving/test-utils/fake-openai.ts';
import { loadAverage, median } from './harness.ts';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '300' },
    streams: { type: 'string', default: '16' },
    role: { type: 'string', default: 'client' },
    upstream: { type: 'string' },
  },
});
const REQUESTS = Number(values.requests);
const STREAMS = Number(values.streams);
const BLOCKS = 4;
const TOKEN = 'b'.repeat(64);

const tok = loadTokenizer(tokenizerSourceDir('qwen2'));
const reply = 'The quick brown fox jumps over the lazy dog. '.repeat(20).trim();
const ids = tok.encode(reply);

// Three processes, as in use: the client (this one), the upstream model server, and the proxy with its core. In one
// process, the proxy's work after a reply (storing the turn) would be counted against the client's clock.
if (values.role === 'upstream') {
  const fast = await startFakeUpstream({ reply, ids, pieceOf: (id) => tok.decode([id]), style: 'llama-server' });
  // A paced stream (one chunk per token, 1 ms apart, as a fast model sends them) to see per-token delay.
  const paced = await startFakeUpstream({ reply, ids, pieceOf: (id) => tok.decode([id]), style: 'llama-server', chunkDelayMs: 1 });
  process.stdout.write(JSON.stringify({ fast: fast.url, paced: paced.url }) + '\n');
  process.stdin.resume();
  process.stdin.on('end', () => process.exit(0));
} else if (values.role === 'proxy') {
  const urls = JSON.parse(values.upstream!) as { fast: string; paced: string };
  const home = mkdtempSync(path.join(tmpdir(), 'rein-bench-proxy-'));
  const core = createCore({ home: resolveHome({ REIN_HOME: home }) });
  await core.call('setSettings', { values: { 'proxy.baseModelName': 'fake-model' } }, 'system');
  const mk = (url: string) =>
    startProxyServer({ core, token: TOKEN, port: 0, upstream: () => ({ baseUrl: url, kind: 'llama-server' }), vocab: () => tok, producer: producerResolver(core), log: () => {} });
  const fast = await mk(urls.fast);
  const paced = await mk(urls.paced);
  process.stdout.write(JSON.stringify({ fast: fast.url, paced: paced.url }) + '\n');
  process.stdin.resume();
  process.stdin.on('end', () => {
    process.stdout.write(JSON.stringify({ turns: core.status().turns.total }) + '\n');
    core.close();
    rmSync(home, { recursive: true, force: true });
    process.exit(0);
  });
} else {
  await client();
}

function child(args: string[]): { proc: ChildProcess; line: () => Promise<Record<string, unknown>> } {
  const proc = spawn(process.execPath, [fileURLToPath(import.meta.url), ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: proc.stdout })[Symbol.asyncIterator]();
  return { proc, line: async () => JSON.parse((await lines.next()).value as string) as Record<string, unknown> };
}

async function client(): Promise<void> {
const up = child(['--role', 'upstream']);
const upUrls = (await up.line()) as { fast: string; paced: string };
const px = child(['--role', 'proxy', '--upstream', JSON.stringify(upUrls)]);
const pxUrls = (await px.line()) as { fast: string; paced: string };
let target = upUrls.fast;
let through = pxUrls.fast;
const agent = new Agent({ keepAlive: true, maxSockets: 1 });

interface Sample {
  totalMs: number;
  /** Arrival times of the body's chunks, ms after the request was sent. */
  chunks: number[];
}

function send(base: string, body: unknown): Promise<Sample> {
  const data = Buffer.from(JSON.stringify(body));
  const url = new URL(base + '/chat/completions');
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const chunks: number[] = [];
    const r = request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': data.length, authorization: `Bearer ${TOKEN}` } }, (res) => {
      res.on('data', () => chunks.push(performance.now() - t0));
      res.on('end', () => resolve({ totalMs: performance.now() - t0, chunks }));
      res.on('error', reject);
    });
    r.on('error', reject);
    r.end(data);
  });
}

const chat = (extra: Record<string, unknown>) => ({ model: 'fake-model', messages: [{ role: 'user', content: 'Say the fox line.' }], ...extra });

let gapMs = Number(process.env.GAP ?? 10);

async function block(base: string, n: number, body: unknown): Promise<Sample[]> {
  const out: Sample[] = [];
  for (let i = 0; i < n; i++) {
    out.push(await send(base, body));
    // The proxy stores the turn after the reply ended; an agent's next request comes seconds later, not at once.
    if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
  }
  return out;
}

async function compare(label: string, n: number, body: unknown): Promise<{ direct: Sample[]; proxied: Sample[] }> {
  const direct: Sample[] = [];
  const proxied: Sample[] = [];
  await block(target, 20, body);
  await block(through, 20, body);
  for (let b = 0; b < BLOCKS; b++) {
    direct.push(...(await block(target, Math.ceil(n / BLOCKS), body)));
    proxied.push(...(await block(through, Math.ceil(n / BLOCKS), body)));
  }
  const d = median(direct.map((s) => s.totalMs));
  const p = median(proxied.map((s) => s.totalMs));
  console.log(`${label}: median ${p.toFixed(3)} ms through the proxy vs ${d.toFixed(3)} ms direct, added ${(p - d).toFixed(3)} ms per request (ratio ${(p / d).toFixed(2)})`);
  return { direct, proxied };
}

const c0 = process.cpuUsage();
const t0 = performance.now();
console.log(`proxy bench: ${ids.length}-token reply, ${REQUESTS} requests and ${STREAMS} streams per side, load ${loadAverage()}`);
await compare('non-streaming, client with logprobs (pass-through)', REQUESTS, chat({ logprobs: true }));
await compare('non-streaming, client without logprobs (rewritten)', REQUESTS, chat({}));
gapMs = 0;
await compare('non-streaming, back to back (the previous turn is being stored meanwhile)', REQUESTS, chat({}));
gapMs = 10;
target = upUrls.paced;
through = pxUrls.paced;
for (const [label, body] of [
  ['streaming, client with logprobs (pass-through)', chat({ stream: true, logprobs: true })],
  ['streaming, client without logprobs (rewritten)', chat({ stream: true })],
] as const) {
  const { direct, proxied } = await compare(label, STREAMS, body);
  const ttft = (s: Sample[]) => median(s.map((x) => x.chunks[0] ?? NaN));
  // Per-token time: the span from the first to the last body chunk over the chunks that followed the first.
  const perTok = (s: Sample[]) => median(s.map((x) => (x.chunks.at(-1)! - x.chunks[0]!) / Math.max(1, x.chunks.length - 1)));
  console.log(
    `  first chunk ${ttft(proxied).toFixed(3)} vs ${ttft(direct).toFixed(3)} ms (added ${(ttft(proxied) - ttft(direct)).toFixed(3)}); ` +
      `per chunk ${(perTok(proxied) * 1000).toFixed(0)} vs ${(perTok(direct) * 1000).toFixed(0)} µs apart (added ${((perTok(proxied) - perTok(direct)) * 1000).toFixed(1)} µs; ${median(proxied.map((x) => x.chunks.length))} vs ${median(direct.map((x) => x.chunks.length))} chunks)`,
  );
}
const c = process.cpuUsage(c0);
const wall = (performance.now() - t0) / 1000;
agent.destroy();
up.proc.stdin?.end();
px.proc.stdin?.end();
const stored = await px.line();
console.log(`client cpu ${((c.user + c.system) / 1e6).toFixed(1)} s / wall ${wall.toFixed(1)} s; turns stored by the proxy: ${String(stored.turns)}`);
}
