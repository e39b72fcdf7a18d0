// The arena is blind: until a match is voted on, nothing the real `rein serve` answers tells which version wrote
// which side. This test tries every route that shows a turn: getTurn and listTurns (plain, by source, by search),
// the captureTurn answer of POST /v1/turns, ignoreTurn, the events stream (turnCaptured, turnUpdated), the JSONL that
// exportData writes, and the arena's
// own arenaVote, which reveals the versions, after which getTurn may say them too.
//
// The match is made as arenaStart makes it (the proxy stores both answers with their producer, then the store records
// the pair): arenaStart itself needs a trained version on a real model server, which CI does not have. The answers
// come through an upstream where each version is published under its own name, as `rein publish` does, so their
// `model` would name the version as well.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { CaptureTurnInput } from '../../src-main/common/api.ts';
import { createCore } from '../../src-main/node/core/core.ts';
import { resolveHome } from '../../src-main/node/home.ts';
import { startServe } from '../harness.ts';
import type { ServeChild } from '../harness.ts';
import { figure } from './figures.ts';

const BASE_NAME = 'qwen2.5-0.5b-instruct';
const V3_NAME = 'rein-qwen-v3';
let serve: ServeChild;
let home = '';
let matchId = 0;
let turnA = 0;
let turnB = 0;

/** An arena answer as the capture proxy stores it: on-policy, with the version that produced it. */
const answer = (session: string, side: string, version: number): CaptureTurnInput => ({
  source: 'arena',
  session,
  eventId: `arena-${session}-${side}`,
  prompt: 'Which is the better answer?',
  response: `the answer of side ${side}`,
  model: version === 0 ? BASE_NAME : V3_NAME,
  tokens: [1, 2, 3],
  logprobs: [-0.5, -0.25, -1],
  adapterVersion: version,
  policy: { modelId: 'qwen', temperature: 1, topP: 1 },
});

beforeAll(async () => {
  home = mkdtempSync(path.join(tmpdir(), 'rein-arena-blind-'));
  const core = createCore({ home: resolveHome({ REIN_HOME: home }) });
  const a = await core.call('captureTurn', answer('arena-1', 'a', 3), 'proxy');
  const b = await core.call('captureTurn', answer('arena-1', 'b', 0), 'proxy');
  turnA = a.turn!.id;
  turnB = b.turn!.id;
  matchId = core.store.arena.create({ modelId: 'qwen', prompt: 'Which is the better answer?', turnA, turnB, versionA: 3, versionB: 0 }, 'http').id;
  core.close();
  serve = await startServe({ home });
});
afterAll(async () => {
  await serve?.stop();
});

/** Whatever in `x` could name a version: an adapterVersion that is not null, or a model name that differs per version. */
function tells(x: unknown): string[] {
  const found: string[] = [];
  const walk = (v: unknown, at: string): void => {
    if (Array.isArray(v)) v.forEach((e, i) => walk(e, `${at}[${i}]`));
    else if (v !== null && typeof v === 'object') {
      for (const [k, e] of Object.entries(v)) {
        if (k === 'adapterVersion' && e !== null && e !== undefined) found.push(`${at}.${k} = ${JSON.stringify(e)}`);
        else walk(e, `${at}.${k}`);
      }
    } else if (v === V3_NAME || v === BASE_NAME) found.push(`${at} = ${JSON.stringify(v)}`);
  };
  walk(x, '');
  return found;
}

/** The events the stream sends while `during` runs. */
async function events(during: () => Promise<void>): Promise<{ event: string; data: unknown }[]> {
  const ctrl = new AbortController();
  const res = await fetch(new URL('/api/events', serve.url), { headers: { authorization: `Bearer ${serve.token}`, accept: 'text/event-stream' }, signal: ctrl.signal });
  const out: { event: string; data: unknown }[] = [];
  const reader = (async () => {
    let buf = '';
    try {
      for await (const c of res.body!) {
        buf += Buffer.from(c as Uint8Array).toString('utf8');
        let i: number;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const event = /^event: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (event !== undefined && data !== undefined) out.push({ event, data: JSON.parse(data) as unknown });
        }
      }
    } catch {
      // aborted
    }
  })();
  await new Promise((r) => setTimeout(r, 200));
  await during();
  await new Promise((r) => setTimeout(r, 500));
  ctrl.abort();
  await reader;
  return out;
}

test('no route tells an undecided arena answer\'s version; the vote reveals it', async () => {
  const leaks: string[] = [];
  const check = (route: string, x: unknown) => leaks.push(...tells(x).map((t) => `${route}: ${t}`));
  const seen: string[] = [];

  const evs = await events(async () => {
    for (const id of [turnA, turnB]) check(`getTurn ${id}`, await serve.call('getTurn', { turnId: id }));
    check('listTurns', await serve.call('listTurns', {}));
    check('listTurns source=arena', await serve.call('listTurns', { source: 'arena' }));
    check('listTurns search', await serve.call('listTurns', { search: 'the answer of side' }));
    // A new arena answer, stored as the proxy stores it before its match exists: its captureTurn answer and event.
    const posted = await serve.post('/v1/turns', answer('arena-2', 'a', 3));
    check('POST /v1/turns', posted.body);
    check('ignoreTurn', await serve.call('ignoreTurn', { turnId: (posted.body as { turn: { id: number } }).turn.id }));
    const file = path.join(home, 'export.jsonl');
    await serve.call('exportData', { path: file });
    const lines = readFileSync(file, 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { type: string });
    check('exportData', lines.filter((l) => l.type === 'turn'));
  });
  for (const e of evs) check(`event ${e.event}`, e.data);
  seen.push(`events while blind: ${evs.map((e) => e.event).join(', ')}`);

  // The vote: the arena's own answer reveals the versions, and from then on getTurn may say them.
  let voted: unknown = null;
  const after = await events(async () => {
    voted = await serve.call('arenaVote', { matchId, vote: 'a' });
  });
  const a = await serve.call('getTurn', { turnId: turnA });
  const match = (voted as { match: { a: { version: number | null }; b: { version: number | null } } }).match;
  console.log(`${seen.join('; ')}\nleaks before the vote: ${leaks.length === 0 ? 'none' : leaks.join('; ')}\nafter the vote: match versions a ${match.a.version}, b ${match.b.version}; getTurn(a).adapterVersion ${a.adapterVersion}, model ${a.model}; events ${after.map((e) => e.event).join(', ')}`);
  expect(evs.some((e) => e.event === 'turnCaptured')).toBe(true);
  expect(evs.some((e) => e.event === 'turnUpdated')).toBe(true);
  expect(leaks).toEqual([]);
  expect(match.a.version).toBe(3);
  expect(match.b.version).toBe(0);
  expect(a.adapterVersion).toBe(3);
  expect(a.model).toBe(V3_NAME);
  figure(`arena blindness: 0 version tells before the vote over getTurn, listTurns (3 ways), POST /v1/turns, ignoreTurn, exportData and ${evs.length} events; revealed by arenaVote`);
});
