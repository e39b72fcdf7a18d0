// Capture latency: `POST /v1/turns` against a real `rein serve` (child process, temp home), sequential over one
// keep-alive connection, and `rein good` as a whole process. Each figure is printed beside a reference run the same
// way in the same script: a bare node:http server that only parses the JSON (the floor for any Node server), and
// `node -e 0` (the floor for any Node process). Blocks alternate between ours and the reference, because the second
// vCPU here is often busy with other work. Usage: npm run bench:capture [-- --requests 2000 --runs 50]
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { REIN_BIN, startServeChild } from '../src-main/cli/test-utils/rein.ts';

const { values } = parseArgs({ options: { requests: { type: 'string', default: '2000' }, runs: { type: 'string', default: '50' } } });
const REQUESTS = Number(values.requests);
const RUNS = Number(values.runs);
const WARMUP = 200;
const BLOCKS = 4;

/** User + system CPU of a process in ms, from /proc/<pid>/stat (fields 14 and 15, in clock ticks of 10 ms). */
function procCpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return NaN;
  }
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

interface Stats {
  n: number;
  p50: number;
  p99: number;
  mean: number;
  /** Server CPU per request, in ms (NaN where not measured). */
  cpu: number;
}

function stats(samples: number[], cpuMs: number): Stats {
  const s = [...samples].sort((a, b) => a - b);
  return { n: s.length, p50: quantile(s, 0.5), p99: quantile(s, 0.99), mean: s.reduce((a, b) => a + b, 0) / s.length, cpu: cpuMs / s.length };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function post(port: number, token: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v1/turns',
        agent,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** A realistic captured turn: a short prompt, a few context messages, a 2 kB answer. */
function turnBody(i: number): string {
  return JSON.stringify({
    source: 'api',
    session: 'bench',
    eventId: `bench-${i}-${process.pid}`,
    prompt: `Refactor the parser so that it reports the line number of each error (${i}). `.repeat(6),
    context: [
      { role: 'system', content: 'You are a careful coding agent.' },
      { role: 'user', content: 'Earlier question. '.repeat(20) },
      { role: 'assistant', content: 'Earlier answer. '.repeat(40) },
    ],
    response: 'Here is the change, with a test for each case. '.repeat(40),
    model: 'bench-model',
  });
}

const REFERENCE_SERVER = `
  const http = require('node:http');
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const t = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ turn: { eventId: t.eventId }, created: true }));
    });
  });
  server.listen(0, '127.0.0.1', () => console.log(server.address().port));
`;

async function startReference(): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, ['-e', REFERENCE_SERVER], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve) => child.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
  return { child, port };
}

async function timeRequests(port: number, token: string, pid: number, from: number, count: number, out: number[]): Promise<number> {
  const cpu0 = procCpuMs(pid);
  for (let i = 0; i < count; i++) {
    const body = turnBody(from + i);
    const t0 = performance.now();
    const status = await post(port, token, body);
    out.push(performance.now() - t0);
    if (status !== 201) throw new Error(`POST /v1/turns answered ${status}`);
  }
  return procCpuMs(pid) - cpu0;
}

/** Wall time of one whole process, from spawn to exit. */
function timeProcess(args: string[], env: NodeJS.ProcessEnv): number {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, args, { env, encoding: 'utf8' });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return ms;
}

function row(name: string, s: Stats, ref?: Stats): string {
  const f = (x: number) => x.toFixed(2).padStart(9);
  const ratio = ref ? `${(s.p50 / ref.p50).toFixed(2)}x / ${(s.p99 / ref.p99).toFixed(2)}x` : 'reference';
  return `${name.padEnd(44)} ${String(s.n).padStart(5)} ${f(s.p50)} ${f(s.p99)} ${f(s.mean)} ${Number.isNaN(s.cpu) ? '        -' : f(s.cpu)}   ${ratio}`;
}

const home = mkdtempSync(path.join(tmpdir(), 'rein-bench-'));
const serve = await startServeChild(home);
const reference = await startReference();
try {
  const token = readFileSync(path.join(home, 'token'), 'utf8').trim();
  const ours: number[] = [];
  const ref: number[] = [];
  let oursCpu = 0;
  let refCpu = 0;
  await timeRequests(serve.port, token, serve.child.pid!, 0, WARMUP, []);
  await timeRequests(reference.port, token, reference.child.pid!, 0, WARMUP, []);
  const per = Math.ceil(REQUESTS / BLOCKS);
  for (let b = 0; b < BLOCKS; b++) {
    oursCpu += await timeRequests(serve.port, token, serve.child.pid!, WARMUP + b * per, per, ours);
    refCpu += await timeRequests(reference.port, token, reference.child.pid!, WARMUP + b * per, per, ref);
  }
  agent.destroy();

  // `rein good` needs an unrated turn per run; each run rates the newest one left.
  for (let i = 0; i < 2 * RUNS + 10; i++) await post(serve.port, token, turnBody(1_000_000 + i));
  agent.destroy();
  const env = { ...process.env, REIN_HOME: home };
  timeProcess([REIN_BIN, 'good'], env);
  timeProcess(['-e', '0'], env);
  const good: number[] = [];
  const goodDirect: number[] = [];
  const bare: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    good.push(timeProcess([REIN_BIN, 'good'], env));
    bare.push(timeProcess(['-e', '0'], env));
  }
  await serve.stop();
  // With no core running, `rein good` opens the store itself.
  for (let i = 0; i < RUNS; i++) goodDirect.push(timeProcess([REIN_BIN, 'good'], env));

  const refStats = stats(ref, refCpu);
  const bareStats = stats(bare, NaN);
  const capture = stats(ours, oursCpu);
  console.log(`node ${process.version}, ${REQUESTS} sequential keep-alive requests after ${WARMUP} warm-up, ${RUNS} process runs; ms`);
  console.log(`${'case'.padEnd(44)} ${'n'.padStart(5)} ${'p50'.padStart(9)} ${'p99'.padStart(9)} ${'mean'.padStart(9)} ${'srv cpu'.padStart(9)}   vs reference (p50 / p99)`);
  console.log(row('POST /v1/turns, rein serve (store + events)', capture, refStats));
  console.log(row('POST /v1/turns, bare node:http JSON echo', refStats));
  console.log(row('rein good, process, core running (HTTP)', stats(good, NaN), bareStats));
  console.log(row('rein good, process, no core (opens store)', stats(goodDirect, NaN), bareStats));
  console.log(row('node -e 0, process', bareStats));
  console.log(`target: p99 of POST /v1/turns < 20 ms: ${capture.p99 < 20 ? 'met' : 'NOT met'} (${capture.p99.toFixed(2)} ms)`);
} finally {
  reference.child.kill();
  await serve.stop();
  rmSync(home, { recursive: true, force: true });
}
