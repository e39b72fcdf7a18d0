// A rating's place in the rounds, in words (the CLI; the renderer's store/ratings.ts says the same).
import type { RatingView } from '../domain.ts';

/** What a rating's training history says, in the words the history, the turn view and the CLI use. */
export function ratingRoundText(r: Pick<RatingView, 'runId' | 'lastRound'>): string {
  if (r.runId !== null) return `trained in round ${r.runId}`;
  const l = r.lastRound;
  if (l === null) return 'not trained yet';
  if (l.role === 'heldout') return `not trained yet (held out to test round ${l.runId})`;
  return l.outcome === 'rejected' ? `not trained (round ${l.runId} rejected)` : 'not trained yet';
}
