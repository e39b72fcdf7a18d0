// What a round trains on and what scores it (docs/architecture.md, "A round, end to end"). The pending ratings of the model are split at random
// (seeded by the run): about heldoutFraction of them are held out, scored by the eval gate and not trained; they stay
// pending and train in the next round, so nothing is burned. The rest train, with replay_ratio × as many older
// ratings replayed from the runs of the active lineage (the versions the candidate descends from). Older ratings
// that no version of that lineage trained on (their version was rolled back) are unseen by both the candidate and
// its parent: the newest gateTurns of them join the held-out set.
import type { TurnPolicy } from '../../common/api.ts';
import type { ContextMessage } from '../../common/domain.ts';
import { BadInputError } from '../../common/errors.ts';
import { Rng } from '../../common/engine/rng.ts';
import { advantage, roundBaselines } from '../../common/rewards.ts';
import { heldoutCount } from '../../common/training/estimate.ts';
import { ktoClassWeights } from '../../common/training/objectives.ts';
import { readSignals, type WeakLabel } from '../../common/implicit/reader.ts';
import { decodeLogprobs, decodeTokens } from '../store/codec.ts';
import type { RatedTurnRow } from '../store/rounds.ts';
import type { Store } from '../store/store.ts';
import type { ReinTokenizer } from '../engine/tokenizer.ts';
import { STEPS_AFTER_PROMPT, turnMessages } from '../../common/sources.ts';
import { roundRewards } from './reward-mapper.ts';
import { shortWeightsId } from '../model-files/weights-id.ts';

/** weak: an unconfirmed weak label (training.implicit weighted), trained as text at a lower weight, never held out. */
export type SampleRole = 'pending' | 'replay' | 'heldout' | 'weak';

export interface RatedTurn {
  ratingId: number;
  turnId: number;
  role: SampleRole;
  source: string;
  reward: number;
  correction: string | null;
  context: ContextMessage[];
  prompt: string;
  response: string;
  tokens: number[] | null;
  logprobs: number[] | null;
  /** What `logprobs` are the logprobs of (migration 0002), or null when unknown. */
  policy: TurnPolicy | null;
  /**
   * The ids the model server consumed before it sampled `tokens`: the whole rendered prompt, system prompt, tool
   * declarations, history and tool results included (migration 0008). Absent or null: not stored (a turn from before
   * they were, or from a server that does not report them); the prompt is rendered again from the stored text.
   */
  promptIds?: number[] | null;
  createdAt: number;
}


/** A rated turn for a round; `store` loads its stored prompt ids (store/prompt-ids.ts). */
export function toTurn(r: RatedTurnRow, role: SampleRole, store: Pick<Store, 'promptIds'>): RatedTurn {
  return {
    ratingId: r.rating_id,
    turnId: r.turn_id,
    role,
    source: r.source,
    reward: r.value,
    correction: r.correction,
    context: JSON.parse(r.context) as ContextMessage[],
    prompt: r.prompt,
    response: r.response,
    tokens: decodeTokens(r.tokens),
    logprobs: decodeLogprobs(r.logprobs),
    policy: r.policy === null ? null : (JSON.parse(r.policy) as TurnPolicy),
    promptIds: r.tokens === null ? null : store.promptIds.get(r.turn_id),
    createdAt: r.created_at,
  };
}

/**
 * The runs whose versions the adapter `version` descends from (itself included), following adapters.parent_version;
 * empty for the base (version null or 0). pruneInactive deletes the rows of old inactive versions, which were live
 * once: where the chain reaches a deleted version v, the rounds that made v and the versions before it count, except
 * those whose version is kept as rolled back or rejected (never in a live chain since).
 */
export function lineageRuns(store: Store, modelId: string, version: number | null): Set<number> {
  const runs = new Set<number>();
  const seen = new Set<number>();
  for (let v = version; v !== null && v > 0 && !seen.has(v); ) {
    seen.add(v);
    const r = store.adapters.lineage(modelId, v);
    if (r === null) {
      for (const id of store.rounds.runsUpTo(modelId, v)) runs.add(id);
      break;
    }
    if (r.runId !== null) runs.add(r.runId);
    v = r.parentVersion;
  }
  return runs;
}

export async function selectRound(
  store: Store,
  modelId: string,
  o: { replayRatio: number; heldoutFraction: number; gateTurns: number; seed: number; lineageRuns: ReadonlySet<number> },
): Promise<RatedTurn[]> {
  const pending = store.rounds.ratedTurns(modelId, 'pending');
  const older = store.rounds.ratedTurns(modelId, 'trained');
  const rng = new Rng(o.seed);
  // A seeded random subset, not the newest: the newest ratings would always wait a round, and a time split scores
  // the candidate on a different distribution than it trained on when the user's habits drift. A rating is held out
  // by one round at most: one that a round held out before (accepted or rejected) trains in this one, so no rating
  // waits more than one round for the gate's sake, and the history can say when it trains ("held out to test round
  // N; the next round trains it"). Fewer are held out when too few have never been.
  const before = store.rounds.heldOutBefore(modelId);
  const eligible = pending.flatMap((r, i) => (before.has(r.rating_id) ? [] : [i]));
  const heldIdx = new Set(
    [
      ...heldoutIndices(
        eligible.map((i) => pending[i]!.value),
        Math.min(eligible.length, heldoutCount(pending.length, o.heldoutFraction)),
        rng,
      ),
    ].map((k) => eligible[k]!),
  );
  const train = pending.filter((_, i) => !heldIdx.has(i)).map((r) => toTurn(r, 'pending', store));
  const heldPending = pending.filter((_, i) => heldIdx.has(i)).map((r) => toTurn(r, 'heldout', store));
  const seen = older.filter((r) => o.lineageRuns.has(r.run_id!));
  const unseen = older.filter((r) => !o.lineageRuns.has(r.run_id!));
  const nReplay = Math.min(seen.length, Math.round(train.length * o.replayRatio));
  const pool = seen.slice();
  const replay: RatedTurn[] = [];
  for (let i = 0; i < nReplay; i++) replay.push(toTurn(pool.splice(Math.floor(rng.uniform() * pool.length), 1)[0]!, 'replay', store));
  const heldOlder = unseen.slice(Math.max(0, unseen.length - o.gateTurns)).map((r) => toTurn(r, 'heldout', store));
  return withMappedRewards(store, [...train, ...replay, ...heldPending, ...heldOlder]);
}

/** The turns with the user's reward mapper's rewards (training.rewardMapper) in place of the stored defaults, if one is set. */
export async function withMappedRewards(store: Store, turns: RatedTurn[]): Promise<RatedTurn[]> {
  const mapped = await roundRewards(store, turns.map((t) => t.ratingId));
  return mapped === null ? turns : turns.map((t) => ({ ...t, reward: mapped.get(t.ratingId) ?? t.reward }));
}

/**
 * Which of the pending ratings (by their stored rewards) to hold out: `nHeld` of them at random within each reward
 * sign (Good, Bad, zero), in proportion to the sign's share (the largest remainders round up, ties to Good, then
 * Bad), and each sign keeps at least one rating in training. A plain random split held out every Good rating of a
 * round with few of them now and then, and such a round has no contrast to learn from.
 */
export function heldoutIndices(values: readonly number[], nHeld: number, rng: Rng): Set<number> {
  const order = shuffle(values.length, rng);
  const strata = [1, -1, 0].map((sign) => order.filter((i) => Math.sign(values[i]!) === sign));
  const quota = strata.map((g) => (values.length === 0 ? 0 : (nHeld * g.length) / values.length));
  const room = (k: number) => Math.max(0, strata[k]!.length - 1);
  const take = quota.map((q, k) => Math.min(Math.floor(q), room(k)));
  const byRemainder = [0, 1, 2].sort((a, b) => quota[b]! - Math.floor(quota[b]!) - (quota[a]! - Math.floor(quota[a]!)));
  for (let left = nHeld - take.reduce((a, b) => a + b, 0), moved = true; left > 0 && moved; ) {
    moved = false;
    for (const k of byRemainder) {
      if (left > 0 && take[k]! < room(k)) {
        take[k]!++;
        left--;
        moved = true;
      }
    }
  }
  return new Set(strata.flatMap((g, k) => g.slice(0, take[k])));
}

/**
 * An unconfirmed weak label's weight per unit of the reader's confidence (training.implicit weighted): a label read at
 * confidence c trains at c × WEAK_LABEL_FACTOR of an explicit rating's weight (1), so at most half a click. Half, because
 * the reader's precision on follow-ups written after its rules were frozen is 0.935 with a 95% interval down to about
 * 0.79 (docs/implicit-feedback.md), and a wrong label then pushes the model the wrong way at full strength in its
 * batch; it is the same ceiling as the reward model's own labels (reward.pseudoLabelWeight, at most 0.5).
 */
export const WEAK_LABEL_FACTOR = 0.5;

/**
 * An unrated answer with a label that is not the user's rating (a weak label, a reward-model label): it trains as
 * text (KTO; no stored μ is used), under ratingId −turnId, which no rating has.
 */
export function labelledText(store: Pick<Store, 'getTurn'>, turnId: number, role: SampleRole, reward: number): RatedTurn {
  const t = store.getTurn(turnId);
  return {
    ratingId: -turnId,
    turnId,
    role,
    source: t.source,
    reward,
    correction: null,
    context: t.context,
    prompt: t.prompt,
    response: t.response,
    tokens: null,
    logprobs: null,
    policy: null,
    promptIds: null,
    createdAt: t.createdAt,
  };
}

/** One unconfirmed weak label a round trains on: the turn (role weak, reward ±weight) and what the reader read. */
export interface WeakSample {
  turn: RatedTurn;
  label: WeakLabel;
  weight: number;
}

/**
 * The weak labels a weighted round trains on (training.implicit weighted): those the card would offer now (an unrated
 * answer, its signals not dismissed, a label at or above the reader's threshold) that no round of the lineage
 * (lineageRuns) drew yet, so one trains once per line of versions, as a rating does. An answer with a rating of its own is
 * never one of them: the rating alone speaks for it. They train as KTO text (no stored μ is used, so they never join the
 * on-policy baseline), with ratingId −turnId, and are never held out or scored by the gate.
 */
export function weakLabelled(store: Store, lineage: ReadonlySet<number>): WeakSample[] {
  const trained = new Set<number>();
  for (const runId of lineage) for (const w of weakOfRun(store.runs.get(runId)?.metrics)) if (w.drawn) trained.add(w.turnId);
  const out: WeakSample[] = [];
  store.signals.suggested((turnId) => {
    if (trained.has(turnId) || store.liveRating(turnId) !== null) return true;
    const label = readSignals(store.signals.ofTurn(turnId));
    if (label === null) return true;
    const weight = label.confidence * WEAK_LABEL_FACTOR;
    const turn = labelledText(store, turnId, 'weak', label.value === 'good' ? weight : -weight);
    out.push({ turn, label, weight });
    return true;
  });
  return out;
}

/** What a round's metrics say of the weak labels it trained (RoundMetrics.weak). */
export interface WeakMetrics {
  /** labels: how many the round selected; drawn: how many of them trained (gave a gradient), at meanWeight on average. */
  labels: number;
  drawn: number;
  meanWeight: number | null;
  turns: { turnId: number; value: 'good' | 'bad'; rule: string; confidence: number; weight: number; drawn: boolean }[];
}

function weakOfRun(metrics: unknown): WeakMetrics['turns'] {
  const w = (metrics as { weak?: { turns?: unknown } } | null)?.weak?.turns;
  return Array.isArray(w) ? (w as WeakMetrics['turns']) : [];
}

/**
 * Each sequence's KTO weight: its class weight (ktoClassWeights) times its magnitude: a rating's |r| (a 4 of 5 weighs
 * half a 5), 1 for a correction (an explicit judgement), pseudoLabelWeight for a reward-model label (ratingId < 0), and
 * a weak label's confidence × WEAK_LABEL_FACTOR (its |reward|: weakLabelled). The class weights are counted without
 * the weak labels, so training on them (training.implicit weighted) never changes what a rating or a reward-model
 * label weighs, and a weak label weighs at most WEAK_LABEL_FACTOR of a rating of its class.
 */
export function ktoWeights(
  seqs: readonly TrainSequence[],
  turnOf: ReadonlyMap<number, RatedTurn>,
  o: { pseudoLabelWeight: number; ktoDesirable: number; ktoUndesirable: number },
): Map<TrainSequence, number> {
  const counted = seqs.filter((s) => s.kind === 'kto' && s.role !== 'weak');
  const lambda = ktoClassWeights(counted.filter((s) => s.desirable).length, counted.filter((s) => !s.desirable).length, o);
  return new Map(
    seqs.map((s) => {
      const t = turnOf.get(s.ratingId)!;
      const magnitude = t.role === 'weak' ? Math.abs(t.reward) : s.ratingId < 0 ? o.pseudoLabelWeight : t.correction !== null ? 1 : Math.abs(t.reward);
      return [s, (s.desirable ? lambda.desirable : lambda.undesirable) * magnitude];
    }),
  );
}

/** Fisher-Yates over 0..n-1 with a seeded stream. */
export function shuffle(n: number, rng: Rng): number[] {
  const a = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rng.uniform() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

/** One training sequence: prompt + response token ids, where the response starts, and what trains it. */
export interface TrainSequence {
  ratingId: number;
  role: SampleRole;
  tokens: number[];
  /** Index of the first response token. */
  start: number;
  /**
   * One entry per response token: 1 where it trains, 0 where it is only context (an agent turn's tool results and
   * the template's wrapper around them). All ones for an ordinary turn.
   */
  mask: number[];
  kind: 'mispo' | 'kto';
  /** MIS-PO: the stored behaviour logprobs of the response tokens. */
  mu: Float64Array | null;
  /** MIS-PO: r − the reward baseline (the mean reward of the round's other on-policy ratings: roundBaselines), clipped. */
  advantage: number;
  /** KTO: desirable (good, or a correction) or undesirable. */
  desirable: boolean;
  /** KTO of a rating's own answer: why it does not train on-policy (offPolicyReason, or the length budget); null for MIS-PO and a correction's pair. */
  why?: string | null;
}

/** Whether the turn holds the agent's own steps between its prompt and its answer (they train with it, masked). */
function hasSteps(t: Pick<RatedTurn, 'source' | 'context'>): boolean {
  return STEPS_AFTER_PROMPT.has(t.source) && t.context.length > 0;
}

function fit(
  promptIds: number[],
  responseIds: number[],
  mask: number[],
  maxTokens: number,
): { tokens: number[]; start: number; mask: number[]; cut: number; promptCut: boolean } | null {
  if (responseIds.length === 0) return null;
  // Keep the whole response when possible, cutting the prompt from the left; a response alone longer than the
  // budget keeps its beginning (at least one prompt token is needed to score the first response token).
  const resp = responseIds.slice(0, Math.max(1, maxTokens - 1));
  const keepPrompt = Math.max(1, Math.min(promptIds.length, maxTokens - resp.length));
  const prompt = promptIds.slice(promptIds.length - keepPrompt);
  if (prompt.length === 0) return null;
  return { tokens: [...prompt, ...resp], start: prompt.length, mask: mask.slice(0, resp.length), cut: responseIds.length - resp.length, promptCut: prompt.length < promptIds.length };
}

/**
 * fit for an agent turn: the rated part is its end (the answer, after the steps that led to it), so a turn longer
 * than the budget is cut from the left across the prompt and then the earliest steps, which become context or go.
 * Within the budget it is fit: the whole response, the prompt cut from the left.
 */
function fitAgent(promptIds: number[], responseIds: number[], mask: number[], maxTokens: number): { tokens: number[]; start: number; mask: number[] } {
  const all = [...promptIds, ...responseIds];
  const from = Math.max(0, all.length - maxTokens);
  // At least one token before the first scored one.
  const start = Math.max(1, promptIds.length - from);
  return { tokens: all.slice(from), start, mask: mask.slice(from + start - promptIds.length) };
}

/**
 * Why a turn's stored tokens and μ cannot train it on-policy for `modelId`, or null when they can. MIS-PO's ratio
 * π/μ is only an importance weight when μ is the probability the token was drawn with, under the same tokenizer
 * and the same conditioning: so the turn must name the model being trained (same id, so the same tokenizer), the
 * base's own weights where it names them (model-files/weights-id.ts), and the distribution its logprobs are of
 * (migration 0002; older rows do not say).
 *
 * The policy π that a round trains is the model's own distribution (temperature 1, no truncation), so μ must be that
 * distribution too (samplingReason): a turn sampled at another temperature or with a top-p cut, or decoded greedily,
 * trains as text (KTO) with the reason. Those are the model's answers, but not draws from π.
 */
export function offPolicyReason(t: RatedTurn, modelId: string, baseWeights: string | null): string | null {
  if (t.tokens === null || t.logprobs === null || t.tokens.length === 0) return 'no stored tokens and logprobs';
  if (t.policy === null) return 'the turn does not say which distribution its logprobs are of';
  if (t.policy.modelId !== modelId) return `sampled by model ${t.policy.modelId}, not ${modelId}`;
  // Same id, other weights (a Q4 copy of the base served instead of it): μ is not a probability under π's base. A
  // turn that does not name its weights (stored before they were recorded, or from another server) is judged by the id.
  if (t.policy.weights !== undefined && baseWeights !== null && t.policy.weights !== baseWeights) {
    return `sampled from other weights than the training base's (${shortWeightsId(t.policy.weights)}, the base is ${shortWeightsId(baseWeights)}): a quantized or otherwise different file of ${modelId} was served`;
  }
  if (t.logprobs.length !== t.tokens.length) return `${t.logprobs.length} logprobs for ${t.tokens.length} tokens`;
  const sampling = samplingReason(t.policy);
  if (sampling !== null) return sampling;
  // An agent's turn through the proxy (serving/agent-proxy.ts) was sampled after the agent's system prompt, tool
  // declarations and history, which its text does not keep: π is conditioned on what μ was only through the ids the
  // model server consumed (promptIds), stored with the turn since migration 0008.
  if (STEPS_AFTER_PROMPT.has(t.source) && (t.promptIds ?? null) === null) return "the model server's prompt ids (the agent's system prompt, tools and history) are not stored with the turn";
  return null;
}

/**
 * Why a turn's sampling makes μ something other than π's own probability, or null at temperature 1 with no top-p cut.
 * - Greedy decoding (temperature 0): μ is a point mass (the server reports log μ = 0), not a distribution.
 * - A top-p cut: μ is 0 on the tokens outside the nucleus, which π can draw, so π/μ is no importance weight (μ must
 *   cover π's support).
 * - Another temperature: μ = softmax(z/T) covers π's support, but π/μ then differs from 1 before any training, by the
 *   temperature alone; MIS-PO's clip and drift band read that as the policy having moved, and scale the turn down or
 *   clip its tokens. Training π at the turn's temperature instead would teach the tempered model, not the one served
 *   at temperature 1.
 */
export function samplingReason(p: { temperature: number; topP: number }): string | null {
  if (p.temperature === 0) return 'decoded greedily (temperature 0): its logprobs are of a point mass, not of a distribution π can be weighed against';
  if (p.topP < 1) return `sampled with top_p ${p.topP}: μ is 0 outside the nucleus, where π is not, so π/μ is no importance weight`;
  if (p.temperature !== 1) return `sampled at temperature ${p.temperature}, not 1: μ is the tempered distribution, so π/μ would measure the temperature, not the update`;
  return null;
}

function checkIds(ids: readonly number[], tok: ReinTokenizer, what: string): void {
  const bad = ids.findIndex((id) => !Number.isInteger(id) || id < 0 || id >= tok.size);
  if (bad >= 0) throw new BadInputError(`${what} token ${bad} has id ${ids[bad]}, outside the vocabulary (size ${tok.size})`);
}

export interface SkippedTurn {
  ratingId: number;
  turnId: number;
  why: string;
}

/**
 * Turns rated turns into sequences. A turn whose stored tokens and μ are honest for `modelId` (offPolicyReason) and
 * whose prompt fits whole trains with MIS-PO; everything else trains its text with KTO (a scale rating of 3, reward
 * 0, is neither desirable nor undesirable and trains nothing): a prompt cut from the left would condition π on a
 * context μ never saw. A correction adds the corrected text as desirable and the original as undesirable, whatever
 * the rating said. A turn that stores the ids its model server consumed (promptIds: an agent turn through the proxy,
 * its system prompt, tools, history and tool results) is encoded from exactly them, so π is conditioned on what μ
 * was; one whose ids and reply are longer than maxTokens is KTO on its reply after as much of them as fits. An agent
 * turn with steps and no such ids (a Claude tool turn from the hooks) is text: the prompt, then its assistant steps
 * and tool calls with their results, then the answer (ReinTokenizer.encodeAgentTurn); its mask trains the steps and
 * the answer and leaves the results as context. Each KTO sequence of a rating's own answer carries why (`why`). A turn that cannot be encoded (an id outside the
 * vocabulary, text that encodes to nothing, a template that cannot place an agent's steps) is skipped with its
 * reason and never stops the round. The MIS-PO advantages are set once every turn is encoded (onPolicyAdvantages).
 */
export function encodeRound(
  turns: readonly RatedTurn[],
  tok: ReinTokenizer,
  o: {
    modelId: string;
    /** The training base's weights identity (model-files/weights-id.ts); null: unknown, the model id alone decides. */
    baseWeights: string | null;
    advantageClip: number;
    maxTokens: number;
  },
): { sequences: TrainSequence[]; skipped: SkippedTurn[]; baseline: RoundBaseline } {
  const sequences: TrainSequence[] = [];
  const skipped: SkippedTurn[] = [];
  const rewards = new Map<TrainSequence, number>();
  for (const t of turns) {
    const base = { ratingId: t.ratingId, role: t.role };
    const msgs = turnMessages(t);
    // The text of a turn with KTO: the chat as it happened, the response (or `text`) trains. An agent turn's steps
    // are part of what it is judged on: they train too, and only the tool results between them are masked.
    const offPolicy = (text: string, desirable: boolean, why: string | null): void => {
      const e = hasSteps(t) ? tok.encodeAgentTurn(t.prompt, t.context, text) : { ...tok.encodeTurn(msgs, text), mask: null };
      checkIds(e.promptIds, tok, 'prompt');
      checkIds(e.responseIds, tok, 'response');
      const f = e.mask !== null ? fitAgent(e.promptIds, e.responseIds, e.mask, o.maxTokens) : fit(e.promptIds, e.responseIds, e.responseIds.map(() => 1), o.maxTokens);
      if (f === null) throw new BadInputError('the response encodes to no tokens');
      if (!f.mask.includes(1)) throw new BadInputError(`no trained token is left within the length budget of ${o.maxTokens} tokens`);
      sequences.push({ ...base, tokens: f.tokens, start: f.start, mask: f.mask, kind: 'kto', mu: null, advantage: 0, desirable, why });
    };
    try {
      if (t.correction !== null) {
        offPolicy(t.correction, true, null);
        offPolicy(t.response, false, null);
        continue;
      }
      let why = offPolicyReason(t, o.modelId, o.baseWeights);
      /** A context too long to train on-policy: its reply as text after as much of the server's own context as fits. */
      let cutExact: ReturnType<typeof fit> = null;
      if (why === null) {
        checkIds(t.tokens!, tok, 'stored response');
        // The ids the model server consumed, where it reported them: π is conditioned on exactly the context μ was
        // sampled under (an agent's system prompt, tools, history and tool results included), and the trained span
        // is the reply the server sampled after them. Else the chat rendered again from the stored text, as the
        // model server renders it (serving/prompt.ts).
        const exact = t.promptIds ?? null;
        const promptIds = exact ?? tok.encodeChat(msgs, { addGenerationPrompt: true });
        checkIds(promptIds, tok, exact === null ? 'prompt' : 'stored prompt');
        const f = fit(promptIds, t.tokens!, t.tokens!.map(() => 1), o.maxTokens);
        if (f === null) throw new BadInputError('no tokens left after fitting the length budget');
        if (!f.promptCut) {
          const mu = Float64Array.from(t.logprobs!.slice(0, f.tokens.length - f.start));
          const seq: TrainSequence = { ...base, tokens: f.tokens, start: f.start, mask: f.mask, kind: 'mispo', mu, advantage: 0, desirable: t.reward > 0, why: null };
          sequences.push(seq);
          rewards.set(seq, t.reward);
          continue;
        }
        // A context cut from the left would condition π on less than μ saw.
        if (exact !== null) cutExact = f;
        why = `its ${exact === null ? 'prompt' : 'exact context'} (${promptIds.length} tokens) and reply (${t.tokens!.length}) are longer than the training sequence limit of ${o.maxTokens} tokens (training maxTokens)`;
      }
      if (t.reward === 0) {
        skipped.push({ ratingId: t.ratingId, turnId: t.turnId, why: 'a neutral (3 of 5) rating of off-policy text carries no preference' });
        continue;
      }
      if (cutExact !== null) sequences.push({ ...base, tokens: cutExact.tokens, start: cutExact.start, mask: cutExact.mask, kind: 'kto', mu: null, advantage: 0, desirable: t.reward > 0, why });
      else offPolicy(t.response, t.reward > 0, why);
    } catch (e) {
      // Kept in the run's metrics with its reason; the rating stays visible and the round trains the rest.
      skipped.push({ ratingId: t.ratingId, turnId: t.turnId, why: (e as Error).message });
    }
  }
  return { sequences, skipped, baseline: onPolicyAdvantages(sequences, rewards, o.advantageClip) };
}

/** The round's reward baseline: its on-policy ratings that train (pending and replayed) and their mean reward. */
export interface RoundBaseline {
  ratings: number;
  meanReward: number | null;
}

/**
 * Sets each MIS-PO sequence's advantage A = r − b against the round's reward baseline (roundBaselines): b is the mean
 * reward of the round's other trained on-policy ratings; a held-out one meets the mean of them all. KTO text is not
 * in the pool: it was not sampled by the policy, so its rewards say nothing of the policy's value.
 *
 * No contrast, no gradient: when the trained on-policy ratings all carry the same reward (an all-Good or all-Bad
 * round, or a single rating), every advantage is 0. An all-Good round then does not become supervised fine-tuning
 * on its own samples, and an all-Bad one does not push down everything it sampled (and so up styles nobody rated).
 * A rating with A = 0 has no direction; a round in which no trained rating has one takes no step and is rejected,
 * and its ratings stay pending until a rating that differs gives them something to be compared with (round.ts).
 */
function onPolicyAdvantages(sequences: readonly TrainSequence[], rewards: ReadonlyMap<TrainSequence, number>, clip: number): RoundBaseline {
  const onPolicy = sequences.filter((s) => s.kind === 'mispo');
  const trained = onPolicy.filter((s) => s.role !== 'heldout');
  const held = onPolicy.filter((s) => s.role === 'heldout');
  const b = roundBaselines(trained.map((s) => rewards.get(s)!), held.map((s) => rewards.get(s)!));
  const set = (s: TrainSequence, baseline: number | null): void => {
    const a = baseline === null ? 0 : advantage(rewards.get(s)!, baseline, clip);
    // Where a rating equals its baseline, r − b is float residue (~1e-16), not a signal: it is zero.
    s.advantage = Math.abs(a) < 1e-9 ? 0 : a;
  };
  trained.forEach((s, i) => set(s, b.trained[i] ?? null));
  held.forEach((s, i) => set(s, b.heldout[i] ?? null));
  return { ratings: trained.length, meanReward: b.mean };
}
