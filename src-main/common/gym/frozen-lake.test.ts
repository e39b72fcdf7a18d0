import { describe, expect, it } from 'vitest';
import { evaluatePolicy, heldOutSeeds } from './evaluate.ts';
import { FrozenLakeEnv, randomFrozenLake } from './frozen-lake.ts';
import { meanEstimate, rateEstimate } from '../training/intervals.ts';

describe('FrozenLake 4x4', () => {
  it('walks the non-slippery lake to the goal for +1 and terminates', () => {
    const env = new FrozenLakeEnv({ slippery: false });
    expect(env.reset(0)).toBe(0);
    const path = ['down', 'down', 'right', 'right', 'down', 'right'] as const;
    const rs = path.map((a) => env.step(a));
    expect(rs.map((r) => r.obs)).toEqual([4, 8, 9, 10, 14, 15]);
    expect(rs.slice(0, -1).every((r) => r.reward === 0 && !r.terminated)).toBe(true);
    expect(rs.at(-1)).toMatchObject({ reward: 1, terminated: true, truncated: false });
  });

  it('a hole terminates with 0, the edge stays put, and the time limit truncates', () => {
    const env = new FrozenLakeEnv({ slippery: false });
    env.reset(0);
    expect(env.step('up')).toMatchObject({ obs: 0, terminated: false });
    env.step('right');
    expect(env.step('down')).toMatchObject({ obs: 5, reward: 0, terminated: true });
    const short = new FrozenLakeEnv({ slippery: false, maxSteps: 3 });
    short.reset(0);
    short.step('left');
    short.step('left');
    expect(short.step('left')).toMatchObject({ terminated: false, truncated: true });
    expect(() => short.step('left')).toThrow(/after the episode ended/);
  });

  it('on the slippery lake a move goes each of three ways a third of the time', () => {
    const env = new FrozenLakeEnv();
    const ends = new Map<number, number>();
    for (let s = 0; s < 3000; s++) {
      env.reset(s);
      const o = env.step('right').obs;
      ends.set(o, (ends.get(o) ?? 0) + 1);
    }
    // right → 1; slips: up (stays at 0) or down (4).
    expect([...ends.keys()].sort()).toEqual([0, 1, 4]);
    for (const n of ends.values()) expect(Math.abs(n / 3000 - 1 / 3)).toBeLessThan(0.04);
  });

  it('renders the map with the player', () => {
    const env = new FrozenLakeEnv();
    env.reset(0);
    expect(env.render()).toBe('PFFF\nFHFH\nFFFH\nHFFG');
  });

  it('random play rarely reaches the goal (about 1.4% by Gymnasium\'s numbers)', () => {
    const e = evaluatePolicy(new FrozenLakeEnv(), randomFrozenLake, heldOutSeeds(3000));
    expect(e.wins.rate).toBeLessThan(0.04);
    expect(e.wins.rate).toBeGreaterThan(0.002);
  });
});

describe('interval estimates', () => {
  it('a rate has its Wilson interval and a mean its normal one', () => {
    const r = rateEstimate(42, 100);
    expect(r.rate).toBe(0.42);
    // By hand: c = (0.42 + 1.96²/200) / (1 + 1.96²/100) = 0.42297, h = 1.96·√(0.42·0.58/100 + 1.96²/40000) / 1.038416 = 0.09498.
    expect(r.ci[0]).toBeCloseTo(0.3280, 3);
    expect(r.ci[1]).toBeCloseTo(0.5180, 3);
    const m = meanEstimate([1, -1, 1, -1]);
    expect(m.mean).toBe(0);
    expect(m.ci[1]).toBeCloseTo(1.96 * Math.sqrt(4 / 3) / 2, 12);
  });
});
