// Ratings a round cannot train are parked, with the reason, so they neither wait as pending forever nor shrink the
// gate's held-out set without a word. Before a round selects its ratings (data.ts selectRound), every untrained
// rating of the model, pending or parked, is encoded alone as the round would encode it (data.ts encodeRound, same
// tokenizer, length budget and base weights, the reward mapper's rewards): one that gives no
// training sequence is parked with the reason encodeRound gave; a parked one that now gives one (another model of
// the same id with a longer context, a larger training.custom maxTokens, a reward mapper that no longer maps it to 0)
// is pending again and trains in this round. Encoding is tokenization only, no forward pass, so retrying every round
// costs little. The reasons are in words a user can act on; what to do is said where they are shown (the Ratings
// screen, `rein ratings`, `rein status`).
import type { ReinTokenizer } from '../engine/tokenizer.ts';
import type { Store } from '../store/store.ts';
import { encodeRound, toTurn, withMappedRewards } from './data.ts';

export interface Parking {
  /** Ratings parked by this call, with why. */
  parked: { ratingId: number; why: string }[];
  /** Parked ratings that encode now: pending again. */
  unparked: number[];
  /** Every parked rating of the model after this call. */
  total: number;
}

export async function parkUnencodable(store: Store, modelId: string, tok: ReinTokenizer, o: Parameters<typeof encodeRound>[2]): Promise<Parking> {
  const rows = store.rounds.ratedTurns(modelId, 'untrained');
  const turns = await withMappedRewards(store, rows.map((r) => toTurn(r, 'pending', store)));
  const verdicts = rows.map((r, i) => {
    const { sequences, skipped } = encodeRound([turns[i]!], tok, o);
    return { ratingId: r.rating_id, was: r.parked, why: sequences.length > 0 ? null : (skipped[0]?.why ?? 'it gives no training sequence') };
  });
  const out: Parking = { parked: [], unparked: [], total: 0 };
  store.write(() => {
    for (const v of verdicts) {
      if (v.why === v.was || !store.rounds.park(v.ratingId, v.why)) continue;
      if (v.why === null) out.unparked.push(v.ratingId);
      else out.parked.push({ ratingId: v.ratingId, why: v.why });
    }
  });
  out.total = store.counts(modelId).parked;
  return out;
}
