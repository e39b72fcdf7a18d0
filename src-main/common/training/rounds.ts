// A rating's place in the rounds, in words (the CLI; the renderer's store/ratings.ts says the same).
import type { RatingView } from '../domain.ts';

/**
 * What a user can do about a parked rating (RatingView.parked), whatever its reason: each round retries it with its
 * own model and settings (node/training/parking.ts).
 */
export const PARKED_ADVICE =
  'Each round tries a parked rating again: it trains once it can be encoded, e.g. with a model of a longer context or a larger training length budget (training.custom maxTokens). A neutral score of text that is not the model\'s own trains nothing: rate it Good or Bad instead. Or delete the rating.';

/** What a rating's training history says, in the words the history, the turn view and the CLI use. */
export function ratingRoundText(r: Pick<RatingView, 'runId' | 'lastRound' | 'parked'>): string {
  if (r.runId !== null) return `trained in round ${r.runId}`;
  if (r.parked !== null) return `parked, not counted toward a round: ${r.parked}`;
  const l = r.lastRound;
  if (l === null) return 'not trained yet';
  // A rating is held out by one round at most (node/training/data.ts selectRound).
  if (l.role === 'heldout') return `not trained yet (held out to test round ${l.runId}; the next round trains it)`;
  return l.outcome === 'rejected' ? `not trained (round ${l.runId} rejected)` : 'not trained yet';
}
