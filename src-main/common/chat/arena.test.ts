import { describe, expect, it } from 'vitest';
import { wilson } from '../training/gate.ts';
import { headToHead, versionModelName, versionOfModelName, versionStats, voteLabels, type VotedMatch } from './arena.ts';

const m = (versionA: number, versionB: number, vote: VotedMatch['vote']): VotedMatch => ({ versionA, versionB, vote, votedAt: 1 });

describe('arena arithmetic', () => {
  it('names versions to the model server and reads the names back; anything else is the active version', () => {
    for (const v of [0, 1, 42]) expect(versionOfModelName(versionModelName(v))).toBe(v);
    expect(versionModelName(0)).toBe('rein@base');
    for (const other of ['rein', 'rein@v', 'rein@v-1', 'model', null, 3]) expect(versionOfModelName(other)).toBeNull();
  });

  it('a vote rates the winner good and the loser bad, both bad when both are, and neither on a tie', () => {
    expect(voteLabels('a')).toEqual({ a: 'good', b: 'bad' });
    expect(voteLabels('b')).toEqual({ a: 'bad', b: 'good' });
    expect(voteLabels('bad')).toEqual({ a: 'bad', b: 'bad' });
    expect(voteLabels('tie')).toEqual({ a: null, b: null });
  });

  it('counts a head-to-head from either side; ties and both-bad are votes but not in the win rate', () => {
    const ms = [m(2, 1, 'a'), m(1, 2, 'b'), m(1, 2, 'a'), m(2, 1, 'tie'), m(1, 2, 'bad'), m(2, 0, 'a'), m(3, 1, 'a')];
    const h = headToHead(ms, 2, 1);
    expect(h).toMatchObject({ opponent: 1, wins: 2, losses: 1, ties: 1, bothBad: 1, votes: 5 });
    expect(h.winRate).toEqual({ rate: 2 / 3, ci: wilson(2, 3), k: 2, n: 3 });
    // The mirror image from the other side.
    expect(headToHead(ms, 1, 2)).toMatchObject({ wins: 1, losses: 2, ties: 1, bothBad: 1 });
    expect(headToHead([], 2, 1).winRate).toMatchObject({ rate: 0, n: 0 });
  });

  it('per version: against its parent (the base when it has none), against the base, and its Good-rate', () => {
    const stats = versionStats(
      [
        { version: 0, parentVersion: null, createdAt: null, status: 'base' },
        { version: 1, parentVersion: null, createdAt: 10, status: 'inactive' },
        { version: 2, parentVersion: 1, createdAt: 20, status: 'active' },
      ],
      [m(2, 1, 'a'), m(0, 2, 'b'), m(1, 0, 'b')],
      [{ version: 2, good: 3, bad: 1 }],
    );
    expect(stats[0]).toMatchObject({ vsParent: null, vsBase: null, goodRate: { n: 0 } });
    expect(stats[1]!.vsParent).toMatchObject({ opponent: 0, wins: 0, losses: 1 });
    expect(stats[2]!.vsParent).toMatchObject({ opponent: 1, wins: 1, losses: 0 });
    expect(stats[2]!.vsBase).toMatchObject({ opponent: 0, wins: 1, losses: 0 });
    expect(stats[2]!.goodRate).toMatchObject({ rate: 0.75, k: 3, n: 4 });
  });
});
