// What `rein status` and `rein ratings` say about rounds: a rejected round's ratings are pending again, and each
// rating says whether it trained, was held out, or came back from a rejected round.
import { describe, expect, it } from 'vitest';
import type { RatingView, Status } from '../../common/domain.ts';
import { formatRating, formatStatus, statusRow } from './format.ts';

const status: Status = {
  version: '0.1.0',
  home: '/tmp/rein',
  model: { id: 'm', configured: true },
  activeAdapter: null,
  ratings: { good: 6, bad: 4, scaled: 0, total: 10 },
  pending: 10,
  parked: 0,
  threshold: 10,
  ema: null,
  turns: { total: 10, unrated: 0, toRate: 0 },
  training: { state: 'idle', runId: null },
  capture: { paused: false },
  rejected: null,
};

const rating = (over: Partial<RatingView>): RatingView => ({
  id: 1, turnId: 1, kind: 'good', value: 1, scale: null, correction: null, tags: [], comment: null, rater: 'user', modelId: 'm', createdAt: Date.now(), undone: false, runId: null, lastRound: null, parked: null, ...over,
});

describe('rein status and ratings', () => {
  it('say a rejected round left its ratings pending', () => {
    expect(formatStatus(status)).not.toMatch(/rejected/);
    expect(formatStatus({ ...status, rejected: { runId: 3, pending: 8 } })).toContain(statusRow('rejected', 'round 3 was rejected by the gate: its 8 ratings are pending again (not trained)'));
  });

  it('say where each rating stands', () => {
    expect(formatRating(rating({ runId: 2, lastRound: { runId: 2, role: 'trained', outcome: 'accepted' } }))).toContain('trained in round 2');
    expect(formatRating(rating({ lastRound: { runId: 3, role: 'trained', outcome: 'rejected' } }))).toContain('not trained (round 3 rejected)');
    expect(formatRating(rating({ lastRound: { runId: 3, role: 'heldout', outcome: 'accepted' } }))).toContain('not trained yet (held out to test round 3; the next round trains it)');
    expect(formatRating(rating({}))).toContain('not trained yet');
    expect(formatRating(rating({ parked: 'the response encodes to no tokens' }))).toContain('parked, not counted toward a round: the response encodes to no tokens');
  });

  it('say how many ratings are parked, and what to do', () => {
    expect(formatStatus(status)).not.toMatch(/parked/);
    const out = formatStatus({ ...status, pending: 8, parked: 2 });
    expect(out).toContain(statusRow('pending', '8 of 10 to the next training round'));
    expect(out).toMatch(/\nparked\s+2 ratings the rounds cannot encode, not counted as pending \(`rein ratings` says why\)\. Each round tries a parked rating again/);
  });
});
