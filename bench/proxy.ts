// Capture proxy overhead: the same chat requests sent to a bare OpenAI-compatible upstream ("direct"), through a
// minimal Node pass-through proxy ("hop": one more HTTP hop on loopback with a keep-alive agent and nothing else, the
// floor any proxy written in Node pays here), and through the capture proxy (with the real SQLite core storing every
// turn), in alternating blocks, because the second vCPU here is often busy with other work.
// Reported, as medians with the 90th percentile: the added latency per request (non-streaming; the client with and
// without logprobs, the second being the path where the proxy rewrites the reply), and the added time to the first
// streamed chunk and between streamed chunks (pooled over every gap of every stream).
// Targets: < 2 ms per request, no added per-token delay. Usage: node bench/proxy.ts [--requests 300 --streams 16]
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { composeCore } from '../src-main/node/compose.ts';
import { resolveHome } from '../src-main/node/home.ts';
import { tokenizerSourceDir } from '../src-main/node/engine/tiny.ts';
import { loadTokenizer } from '../src-main/node/engine/tokenizer.ts';
import { producerResolver } from '../src-main/node/serving/producer.ts';
import { startProxyServer } from '../src-main/node/serving/proxy.ts';
import { startFakeUpstream } from '../src-main/node/serving/test-utils/fake-openai.ts';
import { loadAverage } from './harness.ts';

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

interface Urls {
  fast: string;
  paced: string;
}

/** The q-quantile (nearest rank) of xs. */
function quantile(xs: readonly number[], q: number): number {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}

interface Stats {
  p50: number;
  p90: number;
}
const stats = (xs: readonly number[]): Stats => ({ p50: quantile(xs, 0.5), p90: quantile(xs, 0.9) });
const fmt = (s: Stats, scale = 1, digits = 3): string => `${(s.p50 * scale).toFixed(digits)} (p90 ${(s.p90 * scale).toFixed(digits)})`;
const added = (a: Stats, b: Stats, scale = 1, digits = 3): string => `${((a.p50 - b.p50) * scale).toFixed(digits)} (p90 ${((a.p90 - b.p90) * scale).toFixed(digits)})`;

// Four processes, as in use: the client (this one), the upstream model server, the proxy with its core, and the bare
// hop. In one process, the proxy's work after a reply (storing the turn) would be counted against the client's clock.
if (values.role === 'upstream') {
  const fast = await startFakeUpstream({ reply, ids, pieceOf: (id) => tok.decode([id]), style: 'llama-server' });
  // A paced stream (one chunk per token, 1 ms apart, as a fast model sends them) to see per-token delay.
  const paced = await startFakeUpstream({ reply, ids, pieceOf: (id) => tok.decode([id]), style: 'llama-server', chunkDelayMs: 1 });
  process.stdout.write(JSON.stringify({ fast: fast.url, paced: paced.url }) + '\n');
  process.stdin.resume();
  process.stdin.on('end', () => process.exit(0));
} else if (values.role === 'proxy') {
  const urls = JSON.parse(values.upstream!) as Urls;
  const home = mkdtempSync(path.join(tmpdir(), 'rein-bench-proxy-'));
  const core = composeCore({ home: resolveHome({ REIN_HOME: home }) });
  await core.call('setSettings', { values: { 'proxy.baseModelName': 'fake-model' } }, 'system');
  const logs: string[] = [];
  const mk = (url: string) =>
    startProxyServer({ core, token: TOKEN, port: 0, upstream: () => ({ baseUrl: url, kind: 'llama-server' }), vocab: () => tok, producer: producerResolver(core), log: (l) => logs.push(l) });
  const fast = await mk(urls.fast);
  const paced = await mk(urls.paced);
  process.stdout.write(JSON.stringify({ fast: fast.url, paced: paced.url }) + '\n');
  process.stdin.resume();
  process.stdin.on('end', () => {
    void Promise.all([fast.idle(), paced.idle()]).then(() => {
      const turns = core.status().turns.total;
      const onPolicy = core.store.stmt('SELECT count(*) AS n FROM turns WHERE tokens IS NOT NULL').get() as { n: number };
      process.stdout.write(JSON.stringify({ turns, onPolicy: onPolicy.n, logs: logs.slice(0, 5) }) + '\n');
      core.close();
      rmSync(home, { recursive: true, force: true });
      process.exit(0);
    });
  });
} else if (values.role === 'hop') {
  // The reference hop: forwards the request's bytes and pipes the reply back, nothing parsed, nothing stored.
  const urls = JSON.parse(values.upstream!) as Urls;
  const agent = new Agent({ keepAlive: true });
  const hop = (base: string) =>
    new Promise<string>((resolve) => {
      const target = new URL(base);
      const server = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const body = Buffer.concat(chunks);
          const up = request(
            { host: target.hostname, port: target.port, path: target.pathname + (req.url ?? '/').replace(/^\/v1/, ''), method: req.method, agent, headers: { 'content-type': 'application/json', 'content-length': body.length } },
            (upRes) => {
              const { connection: _c, 'keep-alive': _k, 'transfer-encoding': _t, ...headers } = upRes.headers;
              res.writeHead(upRes.statusCode ?? 502, headers);
              upRes.pipe(res);
            },
          );
          up.end(body);
        });
      });
      server.listen({ host: '127.0.0.1', port: 0 }, () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`));
    });
  process.stdout.write(JSON.stringify({ fast: await hop(urls.fast), paced: await hop(urls.paced) }) + '\n');
  process.stdin.resume();
  process.stdin.on('end', () => process.exit(0));
} else {
  await client();
}

function child(args: string[]): { proc: ChildProcess; line: () => Promise<Record<string, unknown>> } {
  const proc = spawn(process.execPath, [fileURLToPath(import.meta.url), ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: proc.stdout! })[Symbol.asyncIterator]();
  return { proc, line: async () => JSON.parse((await lines.next()).value as string) as Record<string, unknown> };
}

async function client(): Promise<void> {
  const loadBefore = loadAverage();
  const up = child(['--role', 'upstream']);
  const upUrls = JSON.stringify(await up.line());
  const px = child(['--role', 'proxy', '--upstream', upUrls]);
  const hp = child(['--role', 'hop', '--upstream', upUrls]);
  const targets = { direct: JSON.parse(upUrls) as Urls, hop: (await hp.line()) as unknown as Urls, proxy: (await px.line()) as unknown as Urls };
  /** `sent`: the upstream, asked the request the proxy sends it (with logprobs), where that differs from the client's. */
  type Target = keyof typeof targets | 'sent';
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

  // An identity sampler, pinned, so the fake llama-server's raw logprobs are μ and its turns are stored on-policy (proxy.ts pinnedSampling).
  const chat = (extra: Record<string, unknown>) => ({ model: 'fake-model', messages: [{ role: 'user', content: 'Say the fox line.' }], temperature: 1, top_p: 1, top_k: 0, min_p: 0, ...extra });
  let gapMs = Number(process.env.GAP ?? 10);
  let paced = false;
  let sent = 0;

  async function block(t: Target, n: number, body: unknown): Promise<Sample[]> {
    const out: Sample[] = [];
    for (let i = 0; i < n; i++) {
      const to = targets[t === 'sent' ? 'direct' : t];
      out.push(await send(paced ? to.paced : to.fast, t === 'sent' ? { ...(body as Record<string, unknown>), logprobs: true } : body));
      if (t === 'proxy') sent++;
      // The proxy stores the turn after the reply ended; an agent's next request comes seconds later, not at once.
      if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
    }
    return out;
  }

  async function compare(label: string, n: number, body: Record<string, unknown>): Promise<Record<Target, Sample[]>> {
    const out: Record<Target, Sample[]> = { direct: [], hop: [], proxy: [], sent: [] };
    // Streams are paced by the upstream's timer, so the upstream's cost of logprobs does not show in them.
    const order: Target[] = body.logprobs === true || paced ? ['direct', 'hop', 'proxy'] : ['direct', 'sent', 'hop', 'proxy'];
    for (const t of order) await block(t, 20, body);
    for (let b = 0; b < BLOCKS; b++) for (const t of order) out[t].push(...(await block(t, Math.ceil(n / BLOCKS), body)));
    const s = (t: Target) => stats(out[t].map((x) => x.totalMs));
    console.log(`${label}`);
    console.log(`  per request ms: direct ${fmt(s('direct'))}, hop ${fmt(s('hop'))}, proxy ${fmt(s('proxy'))}; proxy added ${added(s('proxy'), s('direct'))} (the bare hop alone adds ${added(s('hop'), s('direct'))})`);
    if (out.sent.length > 0 && !paced) {
      console.log(`  the upstream asked for logprobs as the proxy asks: ${fmt(s('sent'))} ms; the proxy's own added time: ${added(s('proxy'), s('sent'))} (the hop's ${added(s('hop'), s('direct'))})`);
    }
    return out;
  }

  const c0 = process.cpuUsage();
  const t0 = performance.now();
  console.log(`proxy bench: ${ids.length}-token reply, ${REQUESTS} requests and ${STREAMS} streams per side, gap ${gapMs} ms between requests; load average ${loadBefore} before`);
  await compare('non-streaming, client with logprobs (pass-through)', REQUESTS, chat({ logprobs: true }));
  await compare('non-streaming, client without logprobs (rewritten)', REQUESTS, chat({}));
  const gap = gapMs;
  gapMs = 0;
  await compare('non-streaming, back to back (the previous turn is being stored meanwhile)', REQUESTS, chat({}));
  gapMs = gap;
  paced = true;
  for (const [label, body] of [
    ['streaming, 1 ms per token, client with logprobs (pass-through)', chat({ stream: true, logprobs: true })],
    ['streaming, 1 ms per token, client without logprobs (rewritten)', chat({ stream: true })],
  ] as const) {
    const out = await compare(label, STREAMS, body);
    const first = (t: Target) => stats(out[t].map((x) => x.chunks[0] ?? NaN));
    const gaps = (t: Target) => stats(out[t].flatMap((x) => x.chunks.slice(1).map((c, i) => c - x.chunks[i]!)));
    const count = (t: Target) => quantile(out[t].map((x) => x.chunks.length), 0.5);
    console.log(`  first chunk ms: direct ${fmt(first('direct'))}, hop ${fmt(first('hop'))}, proxy ${fmt(first('proxy'))}; proxy added ${added(first('proxy'), first('direct'))} (the hop ${added(first('hop'), first('direct'))})`);
    console.log(
      `  between chunks µs: direct ${fmt(gaps('direct'), 1000, 0)}, hop ${fmt(gaps('hop'), 1000, 0)}, proxy ${fmt(gaps('proxy'), 1000, 0)}; ` +
        `proxy added ${added(gaps('proxy'), gaps('direct'), 1000, 1)} µs per token (${count('proxy')} vs ${count('direct')} chunks)`,
    );
  }
  const c = process.cpuUsage(c0);
  const wall = (performance.now() - t0) / 1000;
  agent.destroy();
  up.proc.stdin?.end();
  hp.proc.stdin?.end();
  px.proc.stdin?.end();
  const stored = await px.line();
  console.log(
    `client cpu ${((c.user + c.system) / 1e6).toFixed(1)} s / wall ${wall.toFixed(1)} s; turns stored by the proxy: ${String(stored.turns)} of ${sent} ` +
      `(${String(stored.onPolicy)} on-policy); load average ${loadAverage()} after`,
  );
  if (Array.isArray(stored.logs) && stored.logs.length > 0) console.log(`proxy log: ${stored.logs.join(' | ')}`);
}
