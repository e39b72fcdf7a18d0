import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { emaNext } from '../../common/rewards.ts';
import { resolveHome } from '../home.ts';
import { createCore } from './core.ts';

const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), 'test-utils', 'concurrency-child.ts');
const WORKERS = 4;
const PER_WORKER = 250;
const dir = mkdtempSync(path.join(tmpdir(), 'rein-conc-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function runChild(worker: number, startAt: number): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [CHILD, dir, String(worker), String(PER_WORKER), String(startAt)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    p.on('error', reject);
    p.on('close', (code) => resolve({ code, out, err }));
  });
}

it(`${WORKERS} processes, each with its own Core, write ${PER_WORKER} ratings at once`, async () => {
  // No schema yet: the workers also race to create and migrate the fresh file.
  const startAt = Date.now() + 1500;
  const results = await Promise.all(Array.from({ length: WORKERS }, (_, w) => runChild(w, startAt)));
  for (const r of results) {
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({ rated: PER_WORKER, errors: [] });
  }
  const core = createCore({ home: resolveHome({ REIN_HOME: dir }) });
  try {
    const st = await core.call('status', {}, 'test');
    expect(st.turns).toEqual({ total: WORKERS * PER_WORKER, unrated: 0, toRate: 0 });
    expect(st.ratings.total).toBe(WORKERS * PER_WORKER);
    expect(st.ratings.bad).toBe(WORKERS * Math.ceil(PER_WORKER / 3));
    // Every turn got exactly its own rating: each worker rated its own session's newest turn.
    const perTurn = core.store.db
      .prepare('SELECT count(*) AS n FROM (SELECT turn_id FROM ratings GROUP BY turn_id HAVING count(*) = 1)')
      .get() as { n: number };
    expect(perTurn.n).toBe(WORKERS * PER_WORKER);
    // The EMA updates were serialised: each event starts where the previous one ended.
    const events = core.store.db
      .prepare(`SELECT reward, value_before, value_after FROM ema_events WHERE model_id = 'default' ORDER BY id`)
      .all() as { reward: number; value_before: number | null; value_after: number }[];
    expect(events).toHaveLength(WORKERS * PER_WORKER);
    let v: number | null = null;
    for (const e of events) {
      expect(e.value_before).toBe(v);
      v = emaNext(v, e.reward);
      expect(e.value_after).toBe(v);
    }
    expect(st.ema!.value).toBe(v);
    expect(core.store.auditLog(10_000)).toHaveLength(2 * WORKERS * PER_WORKER);
  } finally {
    core.close();
  }
}, 120_000);
