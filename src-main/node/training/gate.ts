// The eval gate's runner: compares a candidate with its parent on the round's held-out bank, with the engine. It
// samples answers from both on the held-out prompts (the same seed for pair j on both sides) and judges each pair,
// scores the log-ratio to the parent of each held-out answer against its training target, and measures the
// candidate's per-token k3 KL to the parent and to the base there. The rule and its reasons are
// common/training/gate.ts.
import type { ContextMessage } from '../../common/domain.ts';
import type { LoraAdapter } from '../../common/engine/lora.ts';
import { k3, preferenceCorrect, wilson, type AnswerComparison, type GateMetrics } from '../../common/training/gate.ts';
import type { Engine } from '../engine/engine.ts';
import type { StoredRewardModel } from '../store/reward.ts';
import type { TrainSequence } from './data.ts';
import { REWARD_GATE_MAX_TOKENS } from './reward/gate.ts';
import { scoreAnswer } from './reward/train.ts';

/**
 * The indices (into the response's logprobs) of the tokens that train: the sequence's mask (data.ts: 1 on an
 * assistant segment, 0 on a tool result) is over the response tokens. Scores and KL count only these.
 */
function trainedTokens(s: TrainSequence, n: number): number[] {
  if (s.mask.length !== n) throw new Error(`gate: rating ${s.ratingId} has a mask of ${s.mask.length} for ${n} response tokens`);
  return Array.from({ length: n }, (_, i) => i).filter((i) => s.mask[i] === 1);
}

/** The training target's direction: the sign of the MIS-PO advantage, or KTO's label; 0 when it has none. */
export function targetDirection(s: TrainSequence): 1 | -1 | 0 {
  if (s.kind === 'kto') return s.desirable ? 1 : -1;
  return s.advantage > 0 ? 1 : s.advantage < 0 ? -1 : 0;
}

const meanAt = (idx: readonly number[], f: (i: number) => number): number => idx.reduce((s, i) => s + f(i), 0) / Math.max(1, idx.length);

/**
 * ROUGE-1 F1 (Lin 2004) of two token-id sequences: the clipped count of shared tokens over their lengths' harmonic
 * mean; 1 for equal sequences, 0 when they share no token (or one is empty).
 */
export function answerSimilarity(a: readonly number[], b: readonly number[]): number {
  if (a.length === 0 || b.length === 0) return 0;
  const counts = new Map<number, number>();
  for (const t of b) counts.set(t, (counts.get(t) ?? 0) + 1);
  let shared = 0;
  for (const t of a) {
    const c = counts.get(t) ?? 0;
    if (c > 0) {
      shared++;
      counts.set(t, c - 1);
    }
  }
  return (2 * shared) / (a.length + b.length);
}

/** One held-out prompt of the bank: the chat before the rated answer, and the rated answer(s) with their directions. */
export interface HeldoutPrompt {
  messages: readonly ContextMessage[];
  /** The rated responses' trained token ids with the direction training pushes each (a correction has two). */
  rated: { tokens: number[]; direction: 1 | -1 }[];
}

/** How the answers comparison samples and judges (common/training/gate.ts). */
export interface AnswerOptions {
  prompts: readonly HeldoutPrompt[];
  /** Answers per side over all prompts: each prompt gets ceil(answers / prompts). */
  answers: number;
  seed: number;
  /** The reward model that judges, or null: the held-out ratings' direction × similarity judges. */
  rewardModel: StoredRewardModel | null;
  maxTokens?: number;
}

/** The prompts of the held-out bank from its sequences (grouped by rating) and the rated turns' chats. */
export function heldoutPrompts(seqs: readonly TrainSequence[], messagesOf: (ratingId: number) => readonly ContextMessage[]): HeldoutPrompt[] {
  const by = new Map<number, HeldoutPrompt>();
  for (const s of seqs) {
    const dir = targetDirection(s);
    if (dir === 0) continue;
    const n = s.tokens.length - s.start;
    const tokens = trainedTokens(s, n).map((i) => s.tokens[s.start + i]!);
    const p = by.get(s.ratingId) ?? { messages: messagesOf(s.ratingId), rated: [] };
    p.rated.push({ tokens, direction: dir });
    by.set(s.ratingId, p);
  }
  return [...by.values()];
}

/**
 * Samples `ceil(answers / prompts)` answers per held-out prompt from the candidate and from its parent, pair j with
 * the same seed on both sides (common random numbers), and compares each pair by the judge: the reward model's p(good)
 * when one is given, else Σ direction × answerSimilarity(answer, rated answer) over the prompt's rated answers. A
 * rating says of a new answer only that it should be more like the rated one (good) or less (bad); the direction
 * judge measures that on what the user would be served, where the log-ratio measures it on the rated text alone.
 */
export async function compareAnswers(engine: Engine, candidate: LoraAdapter, parent: LoraAdapter | null, o: AnswerOptions): Promise<AnswerComparison> {
  const tok = engine.tokenizer;
  if (tok === null) throw new Error('gate: the model has no tokenizer, so answers cannot be sampled');
  const samples = o.prompts.length === 0 ? 0 : Math.max(1, Math.ceil(o.answers / o.prompts.length));
  const out: AnswerComparison = { judge: o.rewardModel === null ? 'direction' : 'reward-model', prompts: o.prompts.length, samples, wins: 0, losses: 0, ties: 0, candidate: 0, parent: 0 };
  const score = async (p: HeldoutPrompt, ids: number[]): Promise<number> =>
    o.rewardModel !== null
      ? scoreAnswer(engine, o.rewardModel, p.messages, tok.decode(ids, { skipSpecialTokens: true }))
      : p.rated.reduce((s, r) => s + r.direction * answerSimilarity(ids, r.tokens), 0);
  for (const [i, p] of o.prompts.entries()) {
    const ids = tok.encodeChat(p.messages, { addGenerationPrompt: true });
    for (let j = 0; j < samples; j++) {
      const seed = o.seed + 100_003 * i + j;
      const opts = { seed, maxTokens: o.maxTokens ?? REWARD_GATE_MAX_TOKENS, temperature: 1, topP: 1 };
      const c = (await engine.sample(ids, { ...opts, adapter: candidate })).tokens;
      const q = (await engine.sample(ids, { ...opts, adapter: parent })).tokens;
      const sc = await score(p, c);
      const sp = c.length === q.length && c.every((t, k) => t === q[k]) ? sc : await score(p, q);
      out.candidate += sc;
      out.parent += sp;
      if (sc > sp) out.wins++;
      else if (sc < sp) out.losses++;
      else out.ties++;
    }
  }
  const pairs = Math.max(1, o.prompts.length * samples);
  out.candidate /= pairs;
  out.parent /= pairs;
  return out;
}

export async function evaluateGate(
  engine: Engine,
  candidate: LoraAdapter,
  parent: LoraAdapter | null,
  heldout: readonly TrainSequence[],
  klBudget: number,
  answers: AnswerOptions | null = null,
): Promise<GateMetrics> {
  const cand: boolean[] = [];
  let kl = 0;
  let klBase = 0;
  let klTokens = 0;
  for (const s of heldout) {
    const base = await engine.logprobs(s.tokens, { start: s.start, adapter: null });
    const lc = await engine.logprobs(s.tokens, { start: s.start, adapter: candidate });
    const lp = parent === null ? base : await engine.logprobs(s.tokens, { start: s.start, adapter: parent });
    const idx = trainedTokens(s, lc.length);
    for (const i of idx) {
      // ρ = π_cand / π_parent per token (common/training/gate.ts).
      kl += k3(lc[i]! - lp[i]!);
      klBase += k3(lc[i]! - base[i]!);
    }
    klTokens += idx.length;
    const dir = targetDirection(s);
    if (dir === 0 || idx.length === 0) continue;
    // This round's change: the log-ratio to the parent, not to the base.
    cand.push(preferenceCorrect(meanAt(idx, (i) => lc[i]! - lp[i]!), dir));
  }
  const n = cand.length;
  const correct = cand.filter(Boolean).length;
  return {
    kind: 'ratings',
    heldout: n,
    correct,
    accuracy: n === 0 ? null : correct / n,
    accuracyCi: n === 0 ? null : wilson(correct, n),
    previousAccuracy: null,
    pairedCi: null,
    answers: answers === null ? null : await compareAnswers(engine, candidate, parent, answers),
    kl: klTokens === 0 ? 0 : kl / klTokens,
    klBase: klTokens === 0 ? 0 : klBase / klTokens,
    klTokens,
    klBudget,
  };
}
