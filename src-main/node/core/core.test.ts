import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { CaptureTurnInput, Events } from '../../common/api.ts';
import { BadInputError, NotAvailableError, NotFoundError, ReinError } from '../../common/errors.ts';
import { emaFold } from '../../common/rewards.ts';
import { resolveHome } from '../home.ts';
import { createCore, type ReinCore } from './core.ts';

const cores: ReinCore[] = [];
const dirs: string[] = [];
let clock = 1_700_000_000_000;

function newCore(): ReinCore {
  const dir = mkdtempSync(path.join(tmpdir(), 'rein-core-'));
  dirs.push(dir);
  const core = createCore({ home: resolveHome({ REIN_HOME: dir }), now: () => clock });
  cores.push(core);
  return core;
}

afterEach(() => {
  for (const c of cores.splice(0)) {
    // Every test disposes what it subscribed: a leak fails the suite (house style 17).
    expect(c.listenerCount()).toBe(0);
    c.close();
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

let seq = 0;
function turn(over: Partial<CaptureTurnInput> = {}): CaptureTurnInput {
  seq++;
  clock += 1000;
  return { source: 'api', session: 's1', eventId: `e${seq}`, prompt: `question ${seq}`, response: `answer ${seq}`, ...over };
}

async function capture(core: ReinCore, over: Partial<CaptureTurnInput> = {}): Promise<number> {
  return (await core.call('captureTurn', turn(over), 'test')).turn!.id;
}

describe('captureTurn', () => {
  it('stores a turn once per (source, eventId)', async () => {
    const core = newCore();
    const input = turn({ context: [{ role: 'system', content: 'be brief' }], model: 'qwen3', tokens: [1, 2, 3], logprobs: [-0.5, -1, -0.25] });
    const a = await core.call('captureTurn', input, 'hook');
    const b = await core.call('captureTurn', { ...input, response: 'changed' }, 'hook');
    expect(a.created).toBe(true);
    expect(b.created).toBe(false);
    expect(b.turn!.id).toBe(a.turn!.id);
    const full = await core.call('getTurn', { turnId: a.turn!.id }, 'test');
    expect(full).toMatchObject({ prompt: input.prompt, response: input.response, model: 'qwen3', onPolicy: true, truncated: false });
    expect(full.context).toEqual([{ role: 'system', content: 'be brief' }]);
    expect(full.tokens).toEqual([1, 2, 3]);
    expect(full.logprobs).toEqual([-0.5, -1, -0.25]);
    // The same event id from another source is another turn.
    expect((await core.call('captureTurn', { ...input, source: 'codex' }, 'hook')).created).toBe(true);
    expect((await core.call('status', {}, 'test')).turns).toEqual({ total: 2, unrated: 2, toRate: 2 });
  });

  it('leaves Chat and Arena answers out of the Rate inbox and its count (listTurns rateInbox, status toRate)', async () => {
    const core = newCore();
    const agent = await capture(core, { source: 'claude-code' });
    const chat = await capture(core, { source: 'chat', session: 'app-chat-x' });
    await capture(core, { source: 'arena', session: 'arena-1' });
    await capture(core, { source: 'arena', session: 'arena-1' });
    const inbox = await core.call('listTurns', { rateInbox: true }, 'test');
    expect(inbox.items.map((t) => t.id)).toEqual([agent]);
    expect(inbox.total).toBe(1);
    expect((await core.call('listTurns', { rateInbox: true, state: 'unrated' }, 'test')).total).toBe(1);
    expect((await core.call('listTurns', {}, 'test')).total).toBe(4);
    expect((await core.call('status', {}, 'test')).turns).toEqual({ total: 4, unrated: 4, toRate: 1 });
    // Rated on the Chat screen: still not the inbox's, and the counts follow.
    await core.call('rate', { turnId: chat, value: 'good' }, 'test');
    expect((await core.call('status', {}, 'test')).turns).toEqual({ total: 4, unrated: 3, toRate: 1 });
  });

  it('redacts secrets before storing them', async () => {
    const core = newCore();
    const id = await capture(core, {
      prompt: 'my key is sk-proj-4fQ9xZ2mLw8RtY1uVb7NcK3pHs6DgJ0a',
      context: [{ role: 'tool', content: 'DB_PASSWORD=correct-horse-battery' }],
    });
    const t = await core.call('getTurn', { turnId: id }, 'test');
    expect(t.prompt).toBe('my key is [REDACTED:openai_key]');
    expect(t.context[0]!.content).toBe('DB_PASSWORD=[REDACTED:secret]');
  });

  // Issue #21 item 9: every field a hook or a person writes is text, identifiers included. Fake keys in the issuers'
  // formats (random characters).
  const KEY = 'sk-proj-4fQ9xZ2mLw8RtY1uVb7NcK3pHs6DgJ0a';
  const GH = 'ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5';
  /** Every text the database holds, turns, ratings and the audit log. */
  const everything = (core: ReinCore): string =>
    JSON.stringify(['turns', 'ratings', 'audit'].map((t) => core.store.db.prepare(`SELECT * FROM ${t}`).all()), (_k, v: unknown) =>
      Buffer.isBuffer(v) ? null : v,
    );

  it('redacts the session, event id, model, policy, context keys and extra fields, tags, rater and comment', async () => {
    const core = newCore();
    const session = `chat-${KEY}`;
    const r = await core.call(
      'captureTurn',
      turn({
        session,
        eventId: `ev-${GH}`,
        model: `qwen3?token=${KEY}`,
        context: [{ role: 'tool', content: 'ok', name: `fn ${GH}`, [`header ${KEY}`]: { auth: `Bearer ${KEY}`, list: [`k ${GH}`] } }],
        tokens: [1],
        logprobs: [-0.5],
        policy: { modelId: `m ${KEY}`, temperature: 1, topP: 1 },
      }),
      'hook',
    );
    // Looked up by the session as the hook knows it: the lookup redacts alike.
    const rated = await core.call('rate', { session, value: 'good', tags: [`t ${GH}`], rater: `bot ${KEY}`, comment: `see ${KEY}` }, 'test');
    expect(rated.rating.turnId).toBe(r.turn!.id);
    expect((await core.call('listTurns', { session }, 'test')).total).toBe(1);
    const stored = everything(core);
    expect(stored).not.toContain('4fQ9xZ2mLw8R');
    expect(stored).not.toContain('aB3dE5gH7jK9');
    const t = await core.call('getTurn', { turnId: r.turn!.id }, 'test');
    expect(t).toMatchObject({ session: 'chat-[REDACTED:openai_key]', eventId: 'ev-[REDACTED:github_token]', model: 'qwen3?token=[REDACTED:openai_key]' });
    expect(t.context[0]).toEqual({
      role: 'tool',
      content: 'ok',
      name: 'fn [REDACTED:github_token]',
      'header [REDACTED:openai_key]': { auth: 'Bearer [REDACTED:openai_key]', list: ['k [REDACTED:github_token]'] },
    });
    expect(rated.rating).toMatchObject({ tags: ['t [REDACTED:github_token]'], rater: 'bot [REDACTED:openai_key]', comment: 'see [REDACTED:openai_key]' });
    expect((await core.call('undo', { session }, 'test')).undone?.id).toBe(rated.rating.id);
  });

  it('keeps two context keys that redact alike', async () => {
    const core = newCore();
    const other = 'sk-proj-9zZ8yY7xX6wW5vV4uU3tT2sS1rR0qQpP';
    const id = await capture(core, { context: [{ role: 'user', content: 'c', [KEY]: 1, [other]: 2 }] });
    const t = await core.call('getTurn', { turnId: id }, 'test');
    expect(t.context[0]).toEqual({ role: 'user', content: 'c', '[REDACTED:openai_key]': 1, '[REDACTED:openai_key]#2': 2 });
  });

  it('redacts a secret the length cap cuts through, rather than keeping its first characters', async () => {
    const core = newCore();
    await core.call('setSettings', { values: { 'capture.maxTextChars': 1000 } }, 'test');
    const id = await capture(core, { prompt: 'x'.repeat(959) + ' ' + KEY + ' and more text'.repeat(10) });
    const t = await core.call('getTurn', { turnId: id }, 'test');
    expect(t.truncated).toBe(true);
    expect(t.prompt.length).toBeLessThanOrEqual(1000);
    expect(t.prompt).not.toContain('sk-proj-4f');
    expect(t.prompt).toMatch(/^x{959} \[REDACT.*…\[truncated \d+ chars\]$/);
  });

  it('caps long text with a visible marker and flags the turn', async () => {
    const core = newCore();
    await core.call('setSettings', { values: { 'capture.maxTextChars': 1000 } }, 'test');
    const long = 'x'.repeat(5000);
    const ctx = Array.from({ length: 5 }, () => ({ role: 'user', content: 'y'.repeat(400) }));
    const id = await capture(core, { prompt: long, response: 'short', context: ctx });
    const t = await core.call('getTurn', { turnId: id }, 'test');
    expect(t.truncated).toBe(true);
    expect(t.prompt.length).toBeLessThanOrEqual(1000);
    expect(t.prompt).toMatch(/^x+…\[truncated \d+ chars\]$/);
    expect(Number(/truncated (\d+) chars/.exec(t.prompt)![1]) + t.prompt.indexOf('…')).toBe(5000);
    expect(t.response).toBe('short');
    // The context shares one budget: the first two messages fit whole, the third is cut, later ones are markers.
    const total = t.context.reduce((n, m) => n + m.content.length, 0);
    expect(total).toBeLessThanOrEqual(1000 + 3 * 64);
    expect(t.context[0]!.content).toBe('y'.repeat(400));
    expect(t.context[2]!.content).toMatch(/^y+…\[truncated \d+ chars\]$/);
    expect(t.context[4]!.content.length).toBeLessThanOrEqual(64);
    expect(t.context[4]!.content).toMatch(/truncated \d+ chars/);
    const small = await capture(core, { prompt: 'p' });
    expect((await core.call('getTurn', { turnId: small }, 'test')).truncated).toBe(false);
  });

  it('refuses to store while paused or from a source not in capture.agents', async () => {
    const core = newCore();
    await core.call('setSettings', { values: { 'capture.paused': true } }, 'test');
    await expect(core.call('captureTurn', turn(), 'hook')).rejects.toMatchObject({ code: 'conflict', message: /capture is paused/ });
    await core.call('setSettings', { values: { 'capture.paused': false, 'capture.agents': ['codex'] } }, 'test');
    await expect(core.call('captureTurn', turn({ source: 'api' }), 'hook')).rejects.toMatchObject({
      code: 'conflict',
      message: /source api is not in capture.agents/,
    });
    expect((await core.call('status', {}, 'test')).turns.total).toBe(0);
  });
});

describe('validation', () => {
  it('names the zod path of a bad field', async () => {
    const core = newCore();
    const bad = { ...turn(), tokens: [1, 2, 3, -4], logprobs: [-1, -1, -1, -1] };
    const err = await core.call('captureTurn', bad, 'test').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadInputError);
    expect((err as BadInputError).field).toBe('tokens.3');
    expect((err as BadInputError).message).toContain('tokens.3');
    const e2 = await core.call('rate', { value: 7 }, 'test').catch((e: unknown) => e);
    expect((e2 as BadInputError).field).toBe('value');
    const e3 = await core.call('captureTurn', { ...turn(), extra: 1 }, 'test').catch((e: unknown) => e);
    expect(e3).toBeInstanceOf(BadInputError);
    await expect(core.call('nope' as 'status', {}, 'test')).rejects.toMatchObject({ field: 'verb' });
    expect((await core.call('status', {}, 'test')).turns.total).toBe(0);
  });

  it('rejects token ids and logprobs that the compact columns cannot hold, storing nothing', async () => {
    const core = newCore();
    await expect(core.call('captureTurn', { ...turn(), tokens: [1, 2 ** 32], logprobs: [-1, -1] }, 'test')).rejects.toMatchObject({
      field: 'tokens.1',
    });
    await expect(core.call('captureTurn', { ...turn(), tokens: [1], logprobs: [-1e300] }, 'test')).rejects.toMatchObject({
      field: 'logprobs.0',
    });
    const id = await capture(core, { session: 'A' });
    await expect(core.call('rate', { turnId: id, session: 'B', value: 'good' }, 'test')).rejects.toMatchObject({ field: 'session' });
    expect((await core.call('status', {}, 'test')).turns.total).toBe(1);
    expect((await core.call('status', {}, 'test')).ratings.total).toBe(0);
  });

  it('validates settings per key and names the key', async () => {
    const core = newCore();
    await expect(core.call('setSettings', { values: { 'training.threshold': 0 } }, 'test')).rejects.toMatchObject({
      field: 'training.threshold',
    });
    await expect(core.call('setSettings', { values: { 'no.such': 1 } }, 'test')).rejects.toMatchObject({ field: 'no.such' });
    // Nothing from a rejected call is written, even the valid keys beside the bad one.
    await expect(
      core.call('setSettings', { values: { 'training.threshold': 5, 'popup.enabled': 'yes' } }, 'test'),
    ).rejects.toMatchObject({ field: 'popup.enabled' });
    expect((await core.call('getSettings', {}, 'test'))['training.threshold']).toBe(32);
    const s = await core.call('setSettings', { values: { 'training.threshold': 5 } }, 'test');
    expect(s['training.threshold']).toBe(5);
    expect((await core.call('status', {}, 'test')).threshold).toBe(5);
  });

  it('answers training verbs with NotAvailableError, never fake data', async () => {
    const core = newCore();
    await expect(core.call('startTraining', {}, 'test')).rejects.toBeInstanceOf(NotAvailableError);
    // With no model directory configured there is nothing to train; with nothing running there is nothing to cancel.
    await expect(core.call('cancelTraining', {}, 'test')).resolves.toEqual({ cancelled: false });
    expect(await core.call('listRuns', {}, 'test')).toEqual([]);
    expect(await core.call('listAdapters', {}, 'test')).toEqual([]);
  });
});

describe('rate, undo and re-rate', () => {
  it('rates the newest unrated turn of a session, then globally', async () => {
    const core = newCore();
    const a1 = await capture(core, { session: 'A' });
    const b1 = await capture(core, { session: 'B' });
    const a2 = await capture(core, { session: 'A' });
    const r1 = await core.call('rate', { session: 'A', value: 'good' }, 'cli');
    expect(r1.rating).toMatchObject({ turnId: a2, kind: 'good', value: 1, scale: null, modelId: 'default', undone: false });
    const r2 = await core.call('rate', { session: 'A', value: 4, tags: ['style'], comment: 'ok', correction: 'better' }, 'cli');
    expect(r2.rating).toMatchObject({ turnId: a1, kind: 'scale', value: 0.5, scale: 4, tags: ['style'], comment: 'ok', correction: 'better' });
    await expect(core.call('rate', { session: 'A', value: 'bad' }, 'cli')).rejects.toBeInstanceOf(NotFoundError);
    const r3 = await core.call('rate', { value: 'bad' }, 'cli');
    expect(r3.rating.turnId).toBe(b1);
    expect(r3.status.ratings).toEqual({ good: 1, bad: 1, scaled: 1, total: 3 });
    expect(r3.status.pending).toBe(3);
    expect(r3.status.turns.unrated).toBe(0);
  });

  it('never picks an arena answer: its vote rates it', async () => {
    const core = newCore();
    const chat = await capture(core, { session: 'A' });
    await capture(core, { session: 'A', source: 'arena' });
    await capture(core, { source: 'arena' });
    expect((await core.call('rate', { session: 'A', value: 'good' }, 'cli')).rating.turnId).toBe(chat);
    await expect(core.call('rate', { value: 'good' }, 'cli')).rejects.toThrow(/no unrated turn/);
  });

  it('skips ignored and expired turns', async () => {
    const core = newCore();
    await core.call('setSettings', { values: { 'capture.expireHours': 1 } }, 'test');
    const old = await capture(core);
    clock += 2 * 3_600_000;
    const fresh = await capture(core);
    const ignored = await capture(core);
    expect((await core.call('ignoreTurn', { turnId: ignored }, 'ipc')).turn.state).toBe('ignored');
    expect((await core.call('rate', { value: 'good' }, 'cli')).rating.turnId).toBe(fresh);
    await expect(core.call('rate', { value: 'good' }, 'cli')).rejects.toThrow(/no unrated turn/);
    expect((await core.call('getTurn', { turnId: old }, 'test')).state).toBe('expired');
    // An explicit turn id can still rate an old turn from the history.
    expect((await core.call('rate', { turnId: old, value: 'bad' }, 'ipc')).rating.turnId).toBe(old);
  });

  it('re-rating replaces the live rating; undo returns the turn to unrated', async () => {
    const core = newCore();
    const id = await capture(core);
    const first = await core.call('rate', { turnId: id, value: 'good' }, 'ipc');
    const second = await core.call('rate', { turnId: id, value: 'bad' }, 'ipc');
    const all = await core.call('listRatings', { includeUndone: true }, 'test');
    expect(all.items.map((r) => [r.id, r.undone])).toEqual([
      [second.rating.id, false],
      [first.rating.id, true],
    ]);
    expect(second.status.ratings.total).toBe(1);
    // The EMA starts at 0 (ReinforceClaw), so one rating of -1 moves it to -0.01.
    expect(second.status.ema!.value).toBe(emaFold(null, [-1]));
    // Undo of the re-rating gives the first rating back; a second undo leaves the turn unrated.
    const u = await core.call('undo', {}, 'cli');
    expect(u.undone!.id).toBe(second.rating.id);
    expect(u.restored!.id).toBe(first.rating.id);
    expect(u.status.ema!.value).toBe(emaFold(null, [1]));
    const u2 = await core.call('undo', {}, 'cli');
    expect(u2.undone!.id).toBe(first.rating.id);
    expect(u2.status.ema).toBeNull();
    expect((await core.call('getTurn', { turnId: id }, 'test')).state).toBe('unrated');
    expect((await core.call('rate', { value: 5 }, 'cli')).rating.turnId).toBe(id);
    expect((await core.call('undo', { session: 'other' }, 'cli')).undone).toBeNull();
  });

  it('re-rating keeps the correction, tags and comment the new rating leaves out, and replaces those it gives', async () => {
    const core = newCore();
    const id = await capture(core);
    await core.call('rate', { turnId: id, value: 2, correction: 'use a map', tags: ['slow'], comment: 'close' }, 'ipc');
    const again = await core.call('rate', { turnId: id, value: 'good' }, 'ipc');
    expect(again.rating).toMatchObject({ kind: 'good', correction: 'use a map', tags: ['slow'], comment: 'close' });
    const third = await core.call('rate', { turnId: id, value: 'bad', tags: ['wrong file'] }, 'ipc');
    expect(third.rating).toMatchObject({ kind: 'bad', correction: 'use a map', tags: ['wrong file'], comment: 'close' });
  });

  it('undo of a re-rating restores the rating it replaced, with its correction; undo of a turn leaves others alone', async () => {
    const core = newCore();
    const id = await capture(core);
    const other = await capture(core, { eventId: 'other' });
    await core.call('rate', { turnId: id, value: 'bad', correction: 'use a map' }, 'ipc');
    await core.call('rate', { turnId: id, value: 'good' }, 'ipc');
    await core.call('rate', { turnId: other, value: 'good' }, 'ipc');
    const u = await core.call('undo', { turnId: id }, 'ipc');
    expect(u.undone).toMatchObject({ turnId: id, kind: 'good' });
    expect(u.restored).toMatchObject({ turnId: id, kind: 'bad', correction: 'use a map', undone: false });
    expect((await core.call('getTurn', { turnId: id }, 'test')).rating?.kind).toBe('bad');
    expect((await core.call('getTurn', { turnId: other }, 'test')).rating?.kind).toBe('good');
    // The baseline holds the live ratings only (bad, good), as if the good re-rating of `id` never happened.
    expect(u.status.ratings).toMatchObject({ good: 1, bad: 1, total: 2 });
    // A second undo of the turn takes the restored rating away; with nothing before it, the turn is unrated.
    const u2 = await core.call('undo', { turnId: id }, 'ipc');
    expect(u2.restored).toBeNull();
    expect((await core.call('getTurn', { turnId: id }, 'test')).state).toBe('unrated');
  });

  it('undo of a session leaves other sessions alone', async () => {
    const core = newCore();
    const a = await capture(core, { session: 'A' });
    const b = await capture(core, { session: 'B' });
    await core.call('rate', { turnId: a, value: 'good' }, 'cli');
    clock += 10;
    await core.call('rate', { turnId: b, value: 'good' }, 'cli');
    const u = await core.call('undo', { session: 'A' }, 'cli');
    expect(u.undone!.turnId).toBe(a);
    expect((await core.call('getTurn', { turnId: b }, 'test')).state).toBe('rated');
  });
});

describe('tags and comments', () => {
  it('filters ratings by tag, finds a comment by search, and lists the tags in use', async () => {
    const core = newCore();
    const a = await capture(core);
    const b = await capture(core);
    const c = await capture(core);
    await core.call('rate', { turnId: a, value: 'bad', tags: ['style', 'wrong'], comment: 'uses var everywhere' }, 'test');
    await core.call('rate', { turnId: b, value: 'good', tags: ['style'] }, 'test');
    await core.call('rate', { turnId: c, value: 2, tags: ['slow'] }, 'test');
    const turnsOf = async (q: { tag?: string; search?: string }) => (await core.call('listRatings', q, 'test')).items.map((r) => r.turnId);
    expect(await turnsOf({ tag: 'style' })).toEqual([b, a]);
    expect(await turnsOf({ tag: 'wrong' })).toEqual([a]);
    expect(await turnsOf({ tag: 'sty' })).toEqual([]);
    expect(await turnsOf({ search: 'var everywhere' })).toEqual([a]);
    expect(await core.call('listTags', {}, 'test')).toEqual([
      { tag: 'style', count: 2 },
      { tag: 'slow', count: 1 },
      { tag: 'wrong', count: 1 },
    ]);
    // An undone rating's tags are not offered.
    await core.call('undo', {}, 'test');
    expect((await core.call('listTags', {}, 'test')).map((t) => t.tag)).toEqual(['style', 'wrong']);
  });
});

describe('EMA baseline', () => {
  async function rateAll(core: ReinCore, values: ('good' | 'bad' | number)[]): Promise<number[]> {
    const ids: number[] = [];
    for (const v of values) {
      const t = await capture(core);
      ids.push((await core.call('rate', { turnId: t, value: v }, 'test')).rating.id);
    }
    return ids;
  }
  const rewards = (vs: ('good' | 'bad' | number)[]): number[] => vs.map((v) => (v === 'good' ? 1 : v === 'bad' ? -1 : ((v as number) - 3) / 2));

  it('starts at 0 and decays by 0.99, per model', async () => {
    const core = newCore();
    const vs: ('good' | 'bad' | number)[] = ['bad', 'good', 'good', 4, 1];
    await rateAll(core, vs);
    const st = await core.call('status', {}, 'test');
    expect(st.ema!.value).toBe(emaFold(null, rewards(vs)));
    expect(st.ema!.count).toBe(5);
    const hist = await core.call('emaHistory', {}, 'test');
    expect(hist.map((p) => p.reason)).toEqual(['rating', 'rating', 'rating', 'rating', 'rating']);
    expect(hist.at(-1)!.value).toBe(st.ema!.value);
    // Another model has its own baseline.
    await core.call('setSettings', { values: { 'model.active': 'llama' } }, 'test');
    expect((await core.call('status', {}, 'test')).ema).toBeNull();
    await rateAll(core, ['good']);
    expect((await core.call('status', {}, 'test')).ema!.value).toBe(emaFold(null, [1]));
    await core.call('setSettings', { values: { 'model.active': null } }, 'test');
    expect((await core.call('status', {}, 'test')).ema!.value).toBe(emaFold(null, rewards(vs)));
  });

  it('undo and delete restore it exactly, also for a rating in the middle', async () => {
    const core = newCore();
    const vs: ('good' | 'bad' | number)[] = ['good', 'bad', 'bad', 5, 'good', 2];
    const ids = await rateAll(core, vs);
    await core.call('deleteRating', { ratingId: ids[1]! }, 'test');
    const kept = rewards(vs).filter((_, i) => i !== 1);
    expect((await core.call('status', {}, 'test')).ema!.value).toBe(emaFold(null, kept));
    await core.call('undo', {}, 'test');
    expect((await core.call('status', {}, 'test')).ema!.value).toBe(emaFold(null, kept.slice(0, -1)));
    const t0 = (await core.call('listRatings', { includeUndone: true, limit: 100 }, 'test')).items.find((r) => r.id === ids[0])!.turnId;
    expect((await core.call('deleteTurn', { turnId: t0 }, 'test')).deleted).toBe(true);
    const left = rewards(vs).filter((_, i) => i !== 0 && i !== 1).slice(0, -1);
    expect((await core.call('status', {}, 'test')).ema!.value).toBe(emaFold(null, left));
    expect((await core.call('listRatings', { includeUndone: true, limit: 100 }, 'test')).items.some((r) => r.id === ids[0])).toBe(false);
  });

  it('rollback restores the chosen version and its stored EMA; reset clears the model', async () => {
    const core = newCore();
    await rateAll(core, ['good', 'bad']);
    const run = core.store.runs.insert({ modelId: 'default', status: 'succeeded', trigger: 'auto' }, 'system');
    core.store.adapters.insert({ modelId: 'default', version: 1, status: 'inactive', path: path.join(core.home.adaptersDir, 'v1'), emaValue: 0.25, runId: run.id }, 'system');
    core.store.adapters.insert({ modelId: 'default', version: 2, status: 'rejected', path: path.join(core.home.adaptersDir, 'v2'), reason: 'kl' }, 'system');
    core.store.adapters.insert({ modelId: 'default', version: 3, status: 'active', path: path.join(core.home.adaptersDir, 'v3'), emaValue: 0.5, parentVersion: 1 }, 'system');
    core.store.db.prepare('UPDATE ratings SET run_id = ?').run(run.id);
    await rateAll(core, ['good']);
    const before = (await core.call('status', {}, 'test')).ema!.value;
    const changes: Events['adapterChanged'][] = [];
    const off = core.on('adapterChanged', (e) => changes.push(e));
    const r = await core.call('rollback', {}, 'ipc');
    off();
    expect(r.active!.version).toBe(1);
    expect(r.status.activeAdapter!.version).toBe(1);
    expect(r.status.ema!.value).toBe(0.25);
    expect(changes).toEqual([
      { modelId: 'default', version: 3, status: 'rolled_back' },
      { modelId: 'default', version: 1, status: 'active' },
    ]);
    // The rolled-back run's ratings are not requeued.
    expect(r.status.pending).toBe(1);
    await expect(core.call('rollback', { version: 2 }, 'ipc')).rejects.toMatchObject({ code: 'conflict' });
    await expect(core.call('rollback', { version: 9 }, 'ipc')).rejects.toBeInstanceOf(NotFoundError);
    // Undo after the rollback: the rollback's restored value is kept, the later rating is replayed out.
    await core.call('undo', {}, 'ipc');
    expect((await core.call('status', {}, 'test')).ema!.value).toBe(0.25);
    expect(before).not.toBe(0.25);
    const base = await core.call('rollback', { version: 0 }, 'ipc');
    expect(base.active).toBeNull();
    expect(base.status.activeAdapter).toBeNull();
    const statuses = (await core.call('listAdapters', {}, 'test')).map((a) => [a.version, a.status]);
    expect(statuses).toEqual([
      [3, 'rolled_back'],
      [2, 'rejected'],
      [1, 'rolled_back'],
    ]);
    // The confirmation's numbers are what reset deletes: the undone rating too, which the live count (2) left out.
    const plan = await core.call('planReset', {}, 'ipc');
    expect((await core.call('status', {}, 'test')).ratings.total).toBe(2);
    expect(plan).toEqual({ ratings: 3, undone: 1, runs: 1, adapters: 3 });
    const updated: Events['turnUpdated'][] = [];
    const offTurns = core.on('turnUpdated', (t) => updated.push(t));
    const res = await core.call('reset', { confirm: true }, 'ipc');
    offTurns();
    expect(res).toEqual({ ratings: plan.ratings, runs: plan.runs, adapters: plan.adapters });
    // Every turn that had a rating is announced unrated, so open lists drop their badges without a reload.
    expect(updated.map((t) => [t.state, t.rating])).toEqual([
      ['unrated', null],
      ['unrated', null],
      ['unrated', null],
    ]);
    const st = await core.call('status', {}, 'test');
    expect(st.ema).toBeNull();
    expect(st.ratings.total).toBe(0);
    expect(st.turns).toEqual({ total: 3, unrated: 3, toRate: 3 });
    expect(await core.call('listAdapters', {}, 'test')).toEqual([]);
    await expect(core.call('reset', {}, 'ipc')).rejects.toBeInstanceOf(BadInputError);
  });
});

describe('events, deletes and the audit log', () => {
  it('emits after each committed write and the disposers leave no listener', async () => {
    const core = newCore();
    const seen: string[] = [];
    const offs = (['turnCaptured', 'ratingAdded', 'ratingUndone', 'ratingDeleted', 'turnDeleted', 'turnUpdated', 'settingsChanged'] as const).map(
      (e) => core.on(e, () => seen.push(e)),
    );
    expect(core.listenerCount()).toBe(7);
    const id = await capture(core);
    await core.call('captureTurn', turn({ eventId: `e${seq}` }), 'test'); // duplicate: no event
    const r = await core.call('rate', { turnId: id, value: 'good' }, 'test');
    await core.call('rate', { turnId: id, value: 'bad' }, 'test');
    await core.call('undo', {}, 'test');
    await core.call('deleteRating', { ratingId: r.rating.id }, 'test');
    await core.call('setSettings', { values: { 'popup.enabled': false } }, 'test');
    await core.call('deleteTurn', { turnId: id }, 'test');
    await expect(core.call('rate', { turnId: id, value: 'good' }, 'test')).rejects.toBeInstanceOf(NotFoundError);
    expect(seen).toEqual([
      'turnCaptured',
      'ratingAdded',
      'turnUpdated',
      'ratingUndone',
      'ratingAdded',
      'turnUpdated',
      // Undo of the re-rating: the bad one goes, the good one it replaced is live again.
      'ratingUndone',
      'ratingAdded',
      'turnUpdated',
      'ratingDeleted',
      'turnUpdated',
      'settingsChanged',
      'turnDeleted',
    ]);
    for (const off of offs) off();
    expect(core.listenerCount()).toBe(0);
  });

  it('a throwing listener does not fail the write', async () => {
    const core = newCore();
    const off = core.on('turnCaptured', () => {
      throw new Error('listener bug');
    });
    const orig = console.error;
    console.error = () => {};
    try {
      expect((await core.call('captureTurn', turn(), 'test')).created).toBe(true);
    } finally {
      console.error = orig;
      off();
    }
  });

  it('records who did what for every write', async () => {
    const core = newCore();
    const id = await capture(core);
    await core.call('rate', { turnId: id, value: 'good' }, 'ipc');
    await core.call('undo', {}, 'cli');
    await core.call('ignoreTurn', { turnId: id }, 'ipc');
    await core.call('setSettings', { values: { 'popup.timeoutSeconds': 10 } }, 'http');
    await core.call('deleteTurn', { turnId: id }, 'cli');
    expect(await core.call('deleteTurn', { turnId: id }, 'cli')).toEqual({ deleted: false });
    const log = core.store.auditLog().reverse().map((a) => [a.actor, a.action, a.target]);
    expect(log).toEqual([
      ['test', 'captureTurn', `turn:${id}`],
      ['ipc', 'rate', expect.stringMatching(/^rating:\d+$/)],
      ['cli', 'undo', expect.stringMatching(/^rating:\d+$/)],
      ['ipc', 'ignoreTurn', `turn:${id}`],
      ['http', 'setSettings', null],
      ['cli', 'deleteTurn', `turn:${id}`],
    ]);
  });

  it('refuses calls after close', async () => {
    const core = newCore();
    core.close();
    await expect(core.call('status', {}, 'test')).rejects.toBeInstanceOf(ReinError);
  });
});
