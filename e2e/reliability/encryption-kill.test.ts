// `rein encryption enable`, `rotate` and `disable` killed with SIGKILL at random points, through the real CLI: after
// each kill, `rein encryption status` tells how far the operation got (rows in the target form, counted here from the
// raw database), and the operation is finished either by running the command again or by the next start of
// `rein serve`, with every text intact (each row read back against what was stored) and none left in the clear.
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { REIN_BIN } from '../../src-main/cli/test-utils/rein.ts';
import { createCore } from '../../src-main/node/core/core.ts';
import { resolveHome } from '../../src-main/node/home.ts';
import { encryptionStatus } from '../../src-main/node/store/encryption.ts';
import { unlockKeyring } from '../../src-main/node/store/keyring.ts';
import { Store } from '../../src-main/node/store/store.ts';
import { startServe } from '../harness.ts';
import { figure } from './figures.ts';

const root = mkdtempSync(path.join(tmpdir(), 'rein-enc-kill-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const PASS = 'correct horse battery staple';
const MARK = 'Kq9-plaintext-marker';
// Enough rows (with 2 KB answers) that the re-seal takes a few of its 256-row batches; kills land before, during and
// after it.
const TURNS = 1000;
const response = (i: number): string => `answer ${i} ${MARK} ${'w'.repeat(2000)}`;
const comment = (i: number): string => `comment ${i} ${MARK}`;

function rein(home: string, args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [REIN_BIN, ...args], { env: { ...process.env, REIN_HOME: home, NO_COLOR: '1', REIN_PASSPHRASE: PASS }, encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/**
 * Runs `rein encryption <op>` and SIGKILLs it `ms` after `from`: its journal appearing (the operation begins), or its
 * keyring changing (the re-seal begins; for disable, which changes the keyring last, its journal too). Infinity lets
 * it finish; it then says how long each phase took.
 */
async function killDuring(home: string, op: string, from: 'journal' | 'keyring', ms: number): Promise<{ killed: boolean; fromJournal: number; fromKeyring: number }> {
  const child = spawn(process.execPath, [REIN_BIN, 'encryption', op, '--json'], { env: { ...process.env, REIN_HOME: home, NO_COLOR: '1', REIN_PASSPHRASE: PASS }, stdio: 'ignore' });
  let gone = false;
  const exited = new Promise<void>((r) => child.on('exit', () => r())).then(() => (gone = true));
  const journal = path.join(home, 'encryption-journal.json');
  const keyring = path.join(home, 'keyring.json');
  const current = (): number | null => {
    try {
      return (JSON.parse(readFileSync(keyring, 'utf8')) as { current: number }).current;
    } catch {
      return null;
    }
  };
  // The re-seal has begun once the keyring holds the key it seals with (today's Rein writes no journal).
  const resealing = (): boolean => (op === 'enable' ? existsSync(keyring) : op === 'rotate' ? current() === 2 : existsSync(journal));
  let tJournal = NaN;
  let tKeyring = NaN;
  let timer: NodeJS.Timeout | undefined;
  const kill = (): void => {
    if (!gone && Number.isFinite(ms)) timer = setTimeout(() => (gone ? undefined : child.kill('SIGKILL')), ms);
  };
  while (!gone && Number.isNaN(tKeyring)) {
    if (Number.isNaN(tJournal) && (existsSync(journal) || resealing())) {
      tJournal = performance.now();
      if (from === 'journal') kill();
    }
    if (resealing()) {
      tKeyring = performance.now();
      if (from === 'keyring') kill();
    }
    await new Promise((r) => setTimeout(r, 2));
  }
  await exited;
  clearTimeout(timer);
  const end = performance.now();
  return { killed: child.signalCode === 'SIGKILL', fromJournal: end - tJournal, fromKeyring: end - tKeyring };
}

/** From the raw database: rows whose text fields are all sealed with `key` (null: all in the clear), of all rows. */
function rawForm(home: string, key: number | null): { done: number; total: number; marker: number } {
  const db = new Database(path.join(home, 'rein.db'), { readonly: true });
  try {
    const rows = [
      ...(db.prepare('SELECT prompt, context, response FROM turns').all() as Record<string, unknown>[]),
      ...(db.prepare('SELECT correction, comment FROM ratings').all() as Record<string, unknown>[]),
    ];
    const ok = (v: unknown) => v === null || (key === null ? typeof v === 'string' : Buffer.isBuffer(v) && v.readUInt32BE(4) === key);
    return { done: rows.filter((r) => Object.values(r).every(ok)).length, total: rows.length, marker: markerBytes(home) };
  } finally {
    db.close();
  }
}

function markerBytes(home: string): number {
  let n = 0;
  for (const f of ['rein.db', 'rein.db-wal']) {
    const p = path.join(home, f);
    if (existsSync(p)) n += readFileSync(p).toString('latin1').split(MARK).length - 1;
  }
  return n;
}

/** Every turn and rating reads back as stored (with the keys when sealed). */
function intact(home: string): boolean {
  const h = resolveHome({ REIN_HOME: home });
  const store = new Store(h.dbPath, Date.now, existsSync(path.join(home, 'keyring.json')) ? unlockKeyring(h, { passphrase: PASS }) : null);
  try {
    const turns = store.db.prepare('SELECT event_id, response FROM turns').all() as { event_id: string; response: unknown }[];
    const bad = turns.filter((t) => store.stmt<{ response: string }>('SELECT response FROM turns WHERE event_id = ?').get(t.event_id)!.response !== response(Number(t.event_id.slice(1))));
    const ratings = store.stmt<{ comment: string; event_id: string }>('SELECT r.comment, t.event_id FROM ratings r JOIN turns t ON t.id = r.turn_id').all();
    return turns.length === TURNS && bad.length === 0 && ratings.length === TURNS / 4 && ratings.every((r) => r.comment === comment(Number(r.event_id.slice(1))));
  } finally {
    store.close();
  }
}

let plainTemplate = '';
let sealedTemplate = '';
const seen: string[] = [];

beforeAll(async () => {
  plainTemplate = path.join(root, 'plain');
  const core = createCore({ home: resolveHome({ REIN_HOME: plainTemplate }) });
  // The store's own insert and rate, in one transaction (the core's verbs one by one take ~10 s for this many).
  core.store.write(() => {
    for (let i = 0; i < TURNS; i++) {
      const { turn } = core.store.captureTurn({ source: 'api', session: null, eventId: `e${i}`, createdAt: i, prompt: `prompt ${i} ${MARK}`, context: [], response: response(i), model: null, tokens: null, logprobs: null, adapterVersion: null, policy: null, truncated: false }, 'test');
      if (i % 4 === 0) core.store.rate(() => turn.id, 'm', { value: 'good', correction: null, tags: [], comment: comment(i), rater: 'user' }, 'test');
    }
  });
  core.close();
  // One whole enable: the sealed home rotate and disable start from.
  sealedTemplate = path.join(root, 'sealed');
  cpSync(plainTemplate, sealedTemplate, { recursive: true });
  await killDuring(sealedTemplate, 'enable', 'journal', Infinity);
  expect(rawForm(sealedTemplate, 1)).toMatchObject({ done: TURNS + TURNS / 4, marker: 0 });
}, 120_000);

interface Case {
  op: 'enable' | 'rotate' | 'disable';
  from: () => string;
  /** The form every row ends in: sealed with key 1 or 2, or null (in the clear). */
  target: number | null;
}

const CASES: Case[] = [
  { op: 'enable', from: () => plainTemplate, target: 1 },
  { op: 'rotate', from: () => sealedTemplate, target: 2 },
  { op: 'disable', from: () => sealedTemplate, target: null },
];

for (const c of CASES) {
  test(`rein encryption ${c.op} killed at random points: status tells how far it got, and it finishes on the next run or start`, { timeout: 300_000 }, async () => {
    let partWay = 0;
    // This operation's own length, from one whole run on a copy: disable unseals faster than enable seals, and kill
    // points drawn from enable's length missed a disable that had ended on all four tries once.
    const timing = path.join(root, `${c.op}-timing`);
    cpSync(c.from(), timing, { recursive: true });
    const whole = await killDuring(timing, c.op, 'journal', Infinity);
    rmSync(timing, { recursive: true, force: true });
    const lengths = { journal: whole.fromJournal, keyring: Number.isFinite(whole.fromKeyring) ? whole.fromKeyring : whole.fromJournal };
    // Two kills: one at a random point of the whole operation, one at a random point of its re-seal; more (at most
    // two) if neither landed part-way.
    for (let attempt = 0; attempt < 4 && (attempt < 2 || partWay === 0); attempt++) {
      const home = path.join(root, `${c.op}-${attempt}`);
      cpSync(c.from(), home, { recursive: true });
      const phase = attempt === 0 ? 'journal' : 'keyring';
      // Random points of the phases as timed whole in beforeAll (to the exit).
      const at = Math.random() * lengths[phase] * 0.9;
      const { killed } = await killDuring(home, c.op, phase, at);
      const raw = rawForm(home, c.target);
      // What `rein encryption status` prints, and its JSON from the same function in this process (one CLI start less).
      const text = rein(home, ['encryption', 'status']).stdout.trim();
      const s = encryptionStatus(resolveHome({ REIN_HOME: home }));
      const keyring = existsSync(path.join(home, 'keyring.json'));
      const current = keyring ? (JSON.parse(readFileSync(path.join(home, 'keyring.json'), 'utf8')) as { current: number }).current : null;
      const journal = existsSync(path.join(home, 'encryption-journal.json'));
      // Where the kill left it: before the keyring changed (and, for disable, before any row did), part-way, or done.
      const from = c.op === 'enable' ? null : 1;
      const untouched = c.op === 'enable' ? !keyring : c.op === 'rotate' ? current === 1 : keyring && !journal && rawForm(home, 1).done === raw.total;
      const mixed = !untouched && (journal || raw.done < raw.total);
      if (mixed) partWay++;
      const rerun = attempt % 2 === 0;
      let resumedBy: string;
      if (rerun) {
        const again = rein(home, ['encryption', c.op, '--json']);
        resumedBy = `rein encryption ${c.op} again: exit ${again.code} ${again.stderr.trim().slice(0, 200)}`;
        if (untouched || mixed) expect(again.code, again.stderr).toBe(0);
      } else {
        const serve = await startServe({ home, env: { REIN_PASSPHRASE: PASS } });
        await serve.stop({ keepHome: true });
        resumedBy = 'rein serve started and stopped';
      }
      // Expected at the end: the target form; the old one when rein serve found nothing begun; a rotation run again
      // after it had finished is a second rotation (key 3).
      const expected = untouched && !rerun ? from : !untouched && !mixed && rerun && c.op === 'rotate' ? 3 : c.target;
      const end = rawForm(home, expected);
      const after = encryptionStatus(resolveHome({ REIN_HOME: home }));
      const line = `${c.op} ${killed ? `killed ${at.toFixed(0)} ms after its ${phase} changed` : 'not killed (it had ended)'}: ${untouched ? 'untouched' : mixed ? 'part-way' : 'done'}, raw ${raw.done} of ${raw.total} in the target form; status "${text}"; ${resumedBy}; after: ${end.done} of ${end.total} in the expected form, marker bytes ${end.marker}, inProgress ${JSON.stringify(after.inProgress)}`;
      console.log(line);
      seen.push(line);

      // The status is the truth: part-way shows as in progress, with the counts the raw database has.
      if (mixed) {
        expect(s.inProgress, text).toMatchObject({ op: c.op, done: raw.done, total: raw.total });
        expect(text).toMatch(new RegExp(`${c.op === 'disable' ? 'unsealing' : 'sealing'} in progress: ${raw.done} of ${raw.total}`));
      } else {
        expect(s.inProgress ?? null, text).toBeNull();
      }
      expect(end.done, line).toBe(end.total);
      expect(after.inProgress, line).toBeNull();
      expect(after.enabled).toBe(expected !== null);
      if (expected === null) expect(end.marker).toBeGreaterThanOrEqual(TURNS * 2 + TURNS / 4);
      else expect(end.marker).toBe(0);
      expect(intact(home), line).toBe(true);
      rmSync(home, { recursive: true, force: true });
    }
    expect(partWay, `no kill landed part-way in ${seen.length} tries`).toBeGreaterThan(0);
    figure(`encryption ${c.op} under kill -9: ${partWay} kill(s) part-way; status showed the raw progress each time; finished by a rerun or by rein serve with every row intact`);
  });
}
