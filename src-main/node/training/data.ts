// What a round trains on (ARCHITECTURE §4): every pending rating of the model, plus replay_ratio × older ones. The
// eval gate scores older rated turns that this round does not replay: a time split across rounds, so no pending
// rating is withheld from training (withholding the newest 15% meant a round of 32 trained on 27, and a rating rated
// last before a round always waited a round). Those older turns were trained in earlier rounds, so on them the gate
// checks that the candidate keeps what the user already taught (against the active adapter); the first round has
// none, and its gate scores the trained turns themselves (scope 'trained', gate.ts says so in its reason).
import type { ContextMessage } from '../../common/domain.ts';
import { BadInputError } from '../../common/errors.ts';
import { Rng } from '../../common/engine/rng.ts';
import { EMA_DECAY, advantage } from '../../common/rewards.ts';
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

export function selectRound(store: Store, modelId: string, o: { replayRatio: number; gateTurns: number; seed: number }): RatedTurn[] {
  const pending = store.stmt<Row>(`${SELECT} AND r.run_id IS NULL ORDER BY r.created_at, r.id`).all(modelId);
  const older = store.stmt<Row>(`${SELECT} AND r.run_id IS NOT NULL ORDER BY r.created_at, r.id`).all(modelId);
  const train = pending.map((r) => toTurn(r, 'pending'));
  const nReplay = Math.min(older.length, Math.round(train.length * o.replayRatio));
  const rng = new Rng(o.seed);
  const pool = older.slice();
  const replay: RatedTurn[] = [];
  for (let i = 0; i < nReplay; i++) replay.push(toTurn(pool.splice(Math.floor(rng.uniform() * pool.length), 1)[0]!, 'replay'));
  // The gate's turns: the newest older ratings that were not replayed (pool keeps their time order).
  const held = pool.slice(Math.max(0, pool.length - o.gateTurns)).map((r) => toTurn(r, 'heldout'));
  return [...train, ...replay, ...held];
}

/**
 * The baseline a round uses: the EMA of every live reward of the model with Adam's bias correction (Kingma & Ba
 * 2015, §3): m_n = Σ (1−d)·d^(n−i)·r_i / (1 − d^n). It equals the first reward after one rating, as the stored EMA
 * does, but the stored EMA is seeded by that first reward at full weight, so when all 32 ratings of a first round
 * arrive before it, 0.99^31 = 73% of the baseline is the first rating alone: with a bad first rating A(bad) ≈ −0.1 and
 * the bad turns teach nothing; with a good one A(good) ≈ +0.3. The corrected value weighs the ratings as the EMA's
 * decay says, and converges to the stored EMA once d^n is small (n ≳ 300). Returns null with no ratings.
 */
export function roundBaseline(store: Store, modelId: string, decay = EMA_DECAY): number | null {
  const rewards = store.stmt<{ value: number }>('SELECT value FROM ratings WHERE model_id = ? AND undone_at IS NULL ORDER BY created_at, id').all(modelId);
  if (rewards.length === 0) return null;
  let m = 0;
  for (const r of rewards) m = decay * m + (1 - decay) * r.value;
  return m / (1 - decay ** rewards.length);
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
        // When every rating so far is the same, r − b is float residue (~1e-16), not a signal; it is zero.
        const a = advantage(t.reward, o.baseline, o.advantageClip);
        sequences.push({ ...base, tokens: f.tokens, start: f.start, kind: 'mispo', mu, advantage: Math.abs(a) < 1e-9 ? 0 : a, desirable: t.reward > 0 });
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
