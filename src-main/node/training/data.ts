// What a round trains on (ARCHITECTURE §4): every pending rating of the model, plus replay_ratio × older ones, with
// the newest share of the pending ones held out for the eval gate. A held-out rating keeps run_id NULL, so it is
// still pending and the next round trains it: nothing is silently skipped, and the gate always scores turns that
// neither the candidate nor the active adapter was trained on.
import type { ContextMessage } from '../../common/domain.ts';
import { BadInputError } from '../../common/errors.ts';
import { Rng } from '../../common/engine/rng.ts';
import { advantage } from '../../common/rewards.ts';
import { decodeLogprobs, decodeTokens } from '../store/codec.ts';
import type { Store } from '../store/store.ts';
import type { ReinTokenizer } from '../engine/tokenizer.ts';

export type SampleRole = 'pending' | 'replay' | 'heldout';

export interface RatedTurn {
  ratingId: number;
  turnId: number;
  role: SampleRole;
  reward: number;
  correction: string | null;
  context: ContextMessage[];
  prompt: string;
  response: string;
  tokens: number[] | null;
  logprobs: number[] | null;
  createdAt: number;
}

interface Row {
  rating_id: number;
  turn_id: number;
  value: number;
  correction: string | null;
  created_at: number;
  prompt: string;
  context: string;
  response: string;
  tokens: Buffer | null;
  logprobs: Buffer | null;
}

const SELECT = `SELECT r.id AS rating_id, r.turn_id, r.value, r.correction, r.created_at, t.prompt, t.context, t.response, t.tokens, t.logprobs
  FROM ratings r JOIN turns t ON t.id = r.turn_id WHERE r.model_id = ? AND r.undone_at IS NULL`;

function toTurn(r: Row, role: SampleRole): RatedTurn {
  return {
    ratingId: r.rating_id,
    turnId: r.turn_id,
    role,
    reward: r.value,
    correction: r.correction,
    context: JSON.parse(r.context) as ContextMessage[],
    prompt: r.prompt,
    response: r.response,
    tokens: decodeTokens(r.tokens),
    logprobs: decodeLogprobs(r.logprobs),
    createdAt: r.created_at,
  };
}

export function selectRound(store: Store, modelId: string, o: { replayRatio: number; heldoutFraction: number; seed: number }): RatedTurn[] {
  const pending = store.stmt<Row>(`${SELECT} AND r.run_id IS NULL ORDER BY r.created_at, r.id`).all(modelId);
  const older = store.stmt<Row>(`${SELECT} AND r.run_id IS NOT NULL ORDER BY r.created_at, r.id`).all(modelId);
  // Time split: the newest pending ratings are held out (at least one once there are 4 or more, so a gate can run).
  let nHeld = Math.floor(pending.length * o.heldoutFraction);
  if (o.heldoutFraction > 0 && nHeld === 0 && pending.length >= 4) nHeld = 1;
  const train = pending.slice(0, pending.length - nHeld).map((r) => toTurn(r, 'pending'));
  const held = pending.slice(pending.length - nHeld).map((r) => toTurn(r, 'heldout'));
  const nReplay = Math.min(older.length, Math.round(train.length * o.replayRatio));
  const rng = new Rng(o.seed);
  const pool = older.slice();
  const replay: RatedTurn[] = [];
  for (let i = 0; i < nReplay; i++) replay.push(toTurn(pool.splice(Math.floor(rng.uniform() * pool.length), 1)[0]!, 'replay'));
  return [...train, ...replay, ...held];
}

/** One training sequence: prompt + response token ids, where the response starts, and what trains it. */
export interface TrainSequence {
  ratingId: number;
  role: SampleRole;
  tokens: number[];
  /** Index of the first response token. */
  start: number;
  kind: 'mispo' | 'kto';
  /** MIS-PO: the stored behaviour logprobs of the response tokens. */
  mu: Float64Array | null;
  /** MIS-PO: r − EMA, clipped. */
  advantage: number;
  /** KTO: desirable (good, or a correction) or undesirable. */
  desirable: boolean;
}

function messages(t: RatedTurn): ContextMessage[] {
  return [...t.context, { role: 'user', content: t.prompt }];
}

function fit(promptIds: number[], responseIds: number[], maxTokens: number): { tokens: number[]; start: number; cut: number } | null {
  if (responseIds.length === 0) return null;
  // Keep the whole response when possible, cutting the prompt from the left; a response alone longer than the
  // budget keeps its beginning (at least one prompt token is needed to score the first response token).
  const resp = responseIds.slice(0, Math.max(1, maxTokens - 1));
  const keepPrompt = Math.max(1, Math.min(promptIds.length, maxTokens - resp.length));
  const prompt = promptIds.slice(promptIds.length - keepPrompt);
  if (prompt.length === 0) return null;
  return { tokens: [...prompt, ...resp], start: prompt.length, cut: responseIds.length - resp.length };
}

/**
 * Turns rated turns into sequences. On-policy turns (stored tokens and μ) train with MIS-PO; off-policy text trains
 * with KTO (a scale rating of 3, reward 0, is neither desirable nor undesirable and trains nothing); a correction adds
 * the corrected text as desirable and the original as undesirable, whatever the rating said.
 */
export function encodeRound(turns: readonly RatedTurn[], tok: ReinTokenizer, o: { baseline: number; advantageClip: number; maxTokens: number }): { sequences: TrainSequence[]; skipped: { ratingId: number; why: string }[] } {
  const sequences: TrainSequence[] = [];
  const skipped: { ratingId: number; why: string }[] = [];
  for (const t of turns) {
    const base = { ratingId: t.ratingId, role: t.role };
    try {
      if (t.correction !== null) {
        for (const [text, desirable] of [
          [t.correction, true],
          [t.response, false],
        ] as const) {
          const e = tok.encodeTurn(messages(t), text);
          const f = fit(e.promptIds, e.responseIds, o.maxTokens);
          if (f !== null) sequences.push({ ...base, tokens: f.tokens, start: f.start, kind: 'kto', mu: null, advantage: 0, desirable });
        }
        continue;
      }
      if (t.tokens !== null && t.logprobs !== null && t.tokens.length > 0) {
        const promptIds = tok.encodeChat(messages(t), { addGenerationPrompt: true });
        const f = fit(promptIds, t.tokens, o.maxTokens);
        if (f === null) throw new BadInputError('no tokens left after fitting the length budget');
        const mu = Float64Array.from(t.logprobs.slice(0, f.tokens.length - f.start));
        sequences.push({ ...base, tokens: f.tokens, start: f.start, kind: 'mispo', mu, advantage: advantage(t.reward, o.baseline, o.advantageClip), desirable: t.reward > 0 });
        continue;
      }
      if (t.reward === 0) {
        skipped.push({ ratingId: t.ratingId, why: 'a neutral (3 of 5) rating of off-policy text carries no preference' });
        continue;
      }
      const e = tok.encodeTurn(messages(t), t.response);
      const f = fit(e.promptIds, e.responseIds, o.maxTokens);
      if (f === null) throw new BadInputError('the response encodes to no tokens');
      sequences.push({ ...base, tokens: f.tokens, start: f.start, kind: 'kto', mu: null, advantage: 0, desirable: t.reward > 0 });
    } catch (e) {
      // Recorded in the run's metrics with its reason: a turn the tokenizer cannot encode is reported, not dropped silently.
      skipped.push({ ratingId: t.ratingId, why: (e as Error).message });
    }
  }
  return { sequences, skipped };
}
