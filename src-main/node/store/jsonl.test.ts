import { MIGRATIONS } from './migrations/index.ts';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BadInputError } from '../../common/errors.ts';
import { createCore, type ReinCore } from '../core/core.ts';
import { resolveHome } from '../home.ts';

const cores: ReinCore[] = [];
const dirs: string[] = [];
let clock = 1_700_000_000_000;
function tmp(): string {
  const d = mkdtempSync(path.join(tmpdir(), 'rein-jsonl-'));
  dirs.push(d);
  return d;
}
function newCore(): ReinCore {
  const c = createCore({ home: resolveHome({ REIN_HOME: tmp() }), now: () => (clock += 7) });
  cores.push(c);
  return c;
}
afterEach(() => {
  for (const c of cores.splice(0)) c.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function populate(core: ReinCore): Promise<void> {
  const ids: number[] = [];
  for (let i = 0; i < 6; i++) {
    const r = await core.call(
      'captureTurn',
      {
        source: i % 2 === 0 ? 'api' : 'codex',
        session: `s${i % 3}`,
        eventId: `ev-${i}`,
        prompt: `prompt ${i} ✓ "quotes" \n newline`,
        response: `response ${i}`,
        context: [{ role: 'system', content: `ctx ${i}`, name: 'sys', extra: { n: i } }],
        ...(i === 0 ? {} : { model: 'qwen3' }),
        ...(i === 1 ? { tokens: [5, 4294967295, 0], logprobs: [-0.1, -2.5, -1e-3], policy: { modelId: 'default', temperature: 0.7, topP: 0.9 } } : {}),
        adapterVersion: i === 1 ? 2 : undefined,
        createdAt: 1_600_000_000_000 + i,
      } as never,
      'test',
    );
    ids.push(r.turn!.id);
  }
  await core.call('rate', { turnId: ids[0]!, value: 'good', tags: ['a', 'b'], comment: 'fine', correction: 'fixed' }, 'test');
  await core.call('rate', { turnId: ids[1]!, value: 2, rater: 'alice' }, 'test');
  await core.call('rate', { turnId: ids[1]!, value: 'bad' }, 'test'); // replaces: one undone, one live
  await core.call('rate', { turnId: ids[2]!, value: 5 }, 'test');
  await core.call('ignoreTurn', { turnId: ids[3]! }, 'test');
  const run = core.store.runs.insert({ modelId: 'default', status: 'succeeded', trigger: 'manual', config: { lr: 1e-4 } }, 'system');
  core.store.db.prepare('UPDATE ratings SET run_id = ? WHERE turn_id = ?').run(run.id, ids[0]);
  core.store.db.prepare(`INSERT INTO run_samples (run_id, rating_id, role, advantage) SELECT ?, id, 'pending', 0.5 FROM ratings WHERE turn_id = ?`).run(run.id, ids[0]);
}

/** Everything a user would miss, with database ids replaced by stable keys. */
async function snapshot(core: ReinCore) {
  const turns = (await core.call('listTurns', { limit: 1000 }, 'test')).items;
  const key = new Map(turns.map((t) => [t.id, `${t.source}/${t.eventId}`]));
  const full = await Promise.all(turns.map((t) => core.call('getTurn', { turnId: t.id }, 'test')));
  const strip = <T extends { id: number }>(x: T) => ({ ...x, id: 0 });
  const ratings = (await core.call('listRatings', { limit: 1000, includeUndone: true }, 'test')).items;
  return {
    turns: full
      .map((t) => ({ ...strip(t), rating: t.rating && { ...strip(t.rating), turnId: key.get(t.rating.turnId), runId: t.rating.runId !== null } }))
      .sort((a, b) => a.eventId.localeCompare(b.eventId) || a.source.localeCompare(b.source)),
    ratings: ratings
      .map((r) => ({ ...strip(r), turnId: key.get(r.turnId), runId: r.runId !== null }))
      .sort((a, b) => a.createdAt - b.createdAt || String(a.turnId).localeCompare(String(b.turnId))),
    runs: (await core.call('listRuns', {}, 'test')).map((r) => ({ ...r, id: 0 })),
    status: { ...(await core.call('status', {}, 'test')), home: '' },
  };
}

describe('JSONL export and import', () => {
  it('round-trips every field of turns, ratings and runs', async () => {
    const a = newCore();
    await populate(a);
    const file = path.join(tmp(), 'out.jsonl');
    const ex = await a.call('exportData', { path: file }, 'cli');
    expect(ex).toEqual({ path: file, turns: 6, ratings: 4 });
    const lines = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { type: string });
    expect(lines[0]).toMatchObject({ type: 'header', format: 'rein-export', schemaVersion: MIGRATIONS.length });
    expect(lines.filter((l) => l.type === 'turn')).toHaveLength(6);

    const b = newCore();
    // An existing turn in the target is skipped along with its ratings.
    await b.call('captureTurn', { source: 'codex', eventId: 'ev-5', prompt: 'mine', response: 'mine' }, 'test');
    const im = await b.call('importData', { path: file }, 'cli');
    expect(im).toEqual({ turns: 5, ratings: 4, skipped: 1, bad: 0, badLines: [] });
    const c = newCore();
    expect(await c.call('importData', { path: file }, 'cli')).toEqual({ turns: 6, ratings: 4, skipped: 0, bad: 0, badLines: [] });
    const sa = await snapshot(a);
    const sc = await snapshot(c);
    expect(sc.turns).toEqual(sa.turns);
    // What each turn's μ is of (migration 0002), which no view shows.
    const policies = (core: ReinCore) => core.store.db.prepare('SELECT source, event_id, policy FROM turns ORDER BY source, event_id').all();
    expect(policies(c)).toEqual(policies(a));
    expect(policies(c).filter((r) => (r as { policy: string | null }).policy !== null)).toHaveLength(1);
    expect(sc.ratings).toEqual(sa.ratings);
    expect(sc.runs).toEqual(sa.runs);
    expect(sc.status).toEqual(sa.status);
    // Importing the same file again adds nothing, not even a run.
    expect(await c.call('importData', { path: file }, 'cli')).toEqual({ turns: 0, ratings: 0, skipped: 10, bad: 0, badLines: [] });
    expect(await c.call('listRuns', {}, 'test')).toHaveLength(1);
    // And a second export is the same records.
    const file2 = path.join(tmp(), 'again.jsonl');
    await c.call('exportData', { path: file2 }, 'cli');
    const body = (f: string) => readFileSync(f, 'utf8').split('\n').slice(1).join('\n');
    expect(body(file2)).toBe(body(file));
  });

  it('marks what came from a reaction: a confirmed weak label is a rating with source implicit, an unconfirmed one a weakLabel record that imports as no rating', async () => {
    const a = newCore();
    const say = async (session: string, n: number, prompt: string): Promise<number> =>
      (await a.call('captureTurn', { source: 'claude-code', session, eventId: `${session}:${n}`, prompt, response: `answer ${n}` }, 'hook')).turn!.id;
    const confirmed = await say('w1', 1, 'make the parser accept trailing commas');
    await say('w1', 2, "no, that's wrong, the test still fails");
    const flipped = await say('w2', 1, 'rename getUser');
    await say('w2', 2, 'perfect, thanks');
    const open = await say('w3', 1, 'add a retry loop');
    await say('w3', 2, 'nope, still broken sk-proj-4fQ9xZ2mLw8RtY1uVb7NcK3pHs6DgJ0a');
    const clicked = await say('w4', 1, 'add pagination');
    await say('w4', 2, 'that is wrong, page 2 repeats page 1');
    await a.call('confirmWeakLabel', { turnId: confirmed }, 'test');
    await a.call('confirmWeakLabel', { turnId: flipped, flip: true }, 'test');
    await a.call('rate', { turnId: clicked, value: 'good' }, 'test');
    const file = path.join(tmp(), 'weak.jsonl');
    expect(await a.call('exportData', { path: file }, 'cli')).toMatchObject({ ratings: 3 });
    const lines = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    const rating = (turnId: number) => lines.find((l) => l.type === 'rating' && l.turnId === turnId);
    expect(rating(confirmed)).toMatchObject({
      kind: 'bad',
      rater: 'implicit:says-wrong',
      source: 'implicit',
      implicit: { rule: 'says-wrong', flipped: false, confidence: 0.9, quote: "no, that's wrong", evidence: "no, that's wrong, the test still fails" },
    });
    expect(rating(flipped)).toMatchObject({ kind: 'bad', source: 'implicit', implicit: { rule: 'praise', flipped: true, evidence: 'perfect, thanks' } });
    expect((rating(flipped)!.implicit as { confidence: number }).confidence).toBeGreaterThan(0);
    // The user's own rating is explicit, even where a label was there to confirm.
    expect(rating(clicked)).toMatchObject({ kind: 'good', source: 'explicit', implicit: null });
    // The unconfirmed label: its own record, marked implicit, redacted like any text; never a rating.
    const weak = lines.filter((l) => l.type === 'weakLabel');
    expect(weak).toEqual([
      { type: 'weakLabel', turnId: open, source: 'implicit', value: 'bad', rule: expect.any(String), confidence: expect.any(Number), quote: expect.any(String), evidence: expect.stringContaining('nope, still broken'), signal: 'followup' },
    ]);
    expect(weak[0]!.evidence).not.toContain('sk-proj-4fQ9');
    expect(rating(open)).toBeUndefined();
    const b = newCore();
    expect(await b.call('importData', { path: file }, 'cli')).toMatchObject({ ratings: 3, bad: 0 });
    const raters = (await b.call('listRatings', { limit: 100 }, 'test')).items.map((r) => r.rater);
    expect(raters).toHaveLength(3);
    expect(raters).toEqual(expect.arrayContaining(['implicit-flipped:praise', 'implicit:says-wrong']));
  });

  it('caps and redacts every free-text field of an imported turn and rating, as a capture does (issue #21 item 9)', async () => {
    const key = 'sk-proj-4fQ9xZ2mLw8RtY1uVb7NcK3pHs6DgJ0a';
    const turn = {
      type: 'turn', id: 1, source: 'api', session: `s ${key}`, eventId: `e ${key}`, createdAt: 1_600_000_000_000,
      prompt: `p ${key}`, response: 'r', model: `m ${key}`, tokens: null, logprobs: null, adapterVersion: null,
      context: [{ role: 'user', content: 'c', name: `n ${key}`, [`k ${key}`]: { deep: [`d ${key}`] } }],
      state: 'rated', truncated: false,
    };
    const rating = {
      type: 'rating', id: 1, turnId: 1, modelId: 'default', kind: 'good', value: 1, scale: null, correction: `fix ${key}`,
      tags: [`t ${key}`, 'x'.repeat(500)], comment: `c ${key}`, rater: `r ${key}`, createdAt: 1_600_000_000_001, undoneAt: null, runId: null,
    };
    const file = path.join(tmp(), 'in.jsonl');
    const header = { type: 'header', format: 'rein-export', schemaVersion: 1, exportedAt: 1 };
    writeFileSync(file, [header, turn, rating].map((r) => JSON.stringify(r)).join('\n'));
    const c = newCore();
    expect(await c.call('importData', { path: file }, 'cli')).toEqual({ turns: 1, ratings: 1, skipped: 0, bad: 0, badLines: [] });
    const rows = JSON.stringify([c.store.db.prepare('SELECT * FROM turns').all(), c.store.db.prepare('SELECT * FROM ratings').all()]);
    expect(rows).not.toContain('4fQ9xZ2mLw8R');
    const t = (await c.call('listTurns', {}, 'test')).items[0]!;
    const full = await c.call('getTurn', { turnId: t.id }, 'test');
    expect(full).toMatchObject({ session: 's [REDACTED:openai_key]', eventId: 'e [REDACTED:openai_key]', model: 'm [REDACTED:openai_key]' });
    expect(full.context[0]).toEqual({ role: 'user', content: 'c', name: 'n [REDACTED:openai_key]', 'k [REDACTED:openai_key]': { deep: ['d [REDACTED:openai_key]'] } });
    const r = (await c.call('listRatings', {}, 'test')).items[0]!;
    expect(r).toMatchObject({ correction: 'fix [REDACTED:openai_key]', comment: 'c [REDACTED:openai_key]', rater: 'r [REDACTED:openai_key]' });
    // A tag longer than a rating's tag may be is cut to it, as the rate verb would have refused it.
    expect(r.tags[0]).toBe('t [REDACTED:openai_key]');
    expect(r.tags[1]).toMatch(/^x+…\[truncated \d+ chars\]$/);
    expect(r.tags[1]!.length).toBeLessThanOrEqual(64);
  });

  it('leaves a bad line out, naming its line and field, and imports every good one; refuses a file that is no export', async () => {
    const a = newCore();
    await populate(a);
    const file = path.join(tmp(), 'out.jsonl');
    await a.call('exportData', { path: file }, 'cli');
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    const bad = JSON.parse(lines[3]!) as Record<string, unknown>;
    bad.prompt = 42;
    lines[3] = JSON.stringify(bad);
    const broken = path.join(tmp(), 'broken.jsonl');
    writeFileSync(broken, lines.join('\n'));
    const b = newCore();
    const good = await a.call('status', {}, 'test');
    const out = await b.call('importData', { path: broken }, 'cli');
    // The broken line's turn is left out, and the ratings of it with it, each as a rating of a turn the file lacks.
    const ofIt = lines.filter((l) => (JSON.parse(l) as { type: string; turnId?: number }).type === 'rating' && (JSON.parse(l) as { turnId: number }).turnId === bad.id).length;
    expect(out.bad).toBe(1 + ofIt);
    expect(out.badLines[0]).toEqual({ line: 4, reason: expect.stringMatching(/^prompt: /) as string });
    expect(out.badLines.slice(1).every((l) => /^turnId: /.test(l.reason))).toBe(true);
    const got = await b.call('status', {}, 'test');
    expect(got.turns.total).toBe(good.turns.total - 1);
    expect(out.turns).toBe(good.turns.total - 1);

    const future = path.join(tmp(), 'future.jsonl');
    writeFileSync(future, JSON.stringify({ type: 'header', format: 'rein-export', schemaVersion: 99, exportedAt: 1 }) + '\n');
    await expect(b.call('importData', { path: future }, 'cli')).rejects.toMatchObject({ field: 'schemaVersion' });
    const noHeader = path.join(tmp(), 'nohead.jsonl');
    writeFileSync(noHeader, lines.slice(1).join('\n'));
    await expect(b.call('importData', { path: noHeader }, 'cli')).rejects.toBeInstanceOf(BadInputError);
    await expect(b.call('importData', { path: path.join(tmp(), 'missing.jsonl') }, 'cli')).rejects.toMatchObject({ field: 'path' });
  });

  it('refuses a relative path and names a folder that is not there, writing nothing', async () => {
    const a = newCore();
    await populate(a);
    const cwdBefore = new Set(readdirSync(process.cwd()));
    for (const verb of ['exportData', 'importData'] as const) {
      const err = await a.call(verb, { path: 'rein-export.jsonl' }, 'http').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BadInputError);
      expect((err as BadInputError).message).toBe(`${verb}: the path must be absolute (start with /), got "rein-export.jsonl"`);
    }
    expect(new Set(readdirSync(process.cwd()))).toEqual(cwdBefore);
    const missing = path.join(tmp(), 'no-such-folder', 'out.jsonl');
    const err = await a.call('exportData', { path: missing }, 'http').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadInputError);
    expect((err as BadInputError).message).toBe(`exportData: cannot write ${missing}: the folder ${path.dirname(missing)} does not exist (ENOENT)`);
  });
});
