// ReinCore.rateReward: an environment's reward as a rating (the gym's per-step return), with the events and the
// baseline of an ordinary rating.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createCore, type ReinCore } from './core.ts';
import { resolveHome } from '../home.ts';

let dir: string;
let core: ReinCore;
afterEach(() => {
  core.close();
  rmSync(dir, { recursive: true, force: true });
});

async function turn(c: ReinCore, id: string): Promise<number> {
  const r = await c.call('captureTurn', { source: 'api', eventId: id, prompt: 'p', response: 'r' }, 'cli');
  return (r as { turn: { id: number } }).turn.id;
}

describe('rateReward', () => {
  it('stores the reward itself as the value, its kind by sign, moves the EMA by it and emits ratingAdded', async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'rein-rate-reward-'));
    core = createCore({ home: resolveHome({ REIN_HOME: dir }) });
    const added: number[] = [];
    const off = core.on('ratingAdded', (e) => added.push(e.rating.value));
    const a = await turn(core, 'a');
    const r = core.rateReward(a, 0.81, 'gym');
    expect(r).toMatchObject({ kind: 'good', value: 0.81, scale: null, rater: 'gym', turnId: a });
    // EMA from 0 with decay 0.99: 0.01 · 0.81.
    expect(core.status().ema!.value).toBeCloseTo(0.0081, 12);
    const b = await turn(core, 'b');
    expect(core.rateReward(b, 0, 'gym')).toMatchObject({ kind: 'scale', value: 0, scale: 3 });
    expect(core.rateReward(b, -1.25, 'gym')).toMatchObject({ kind: 'bad', value: -1.25 });
    // The second rating of b replaced the first: two live ratings, and the EMA replays 0.81 then −1.25.
    expect(core.status().ratings.total).toBe(2);
    expect(core.status().ema!.value).toBeCloseTo(0.99 * 0.0081 + 0.01 * -1.25, 12);
    expect(added).toEqual([0.81, 0, -1.25]);
    expect(() => core.rateReward(b, Number.NaN, 'gym')).toThrow(/a reward must be a finite number/);
    expect(() => core.rateReward(999, 1, 'gym')).toThrow(/turn 999 does not exist/);
    off();
  });
});
