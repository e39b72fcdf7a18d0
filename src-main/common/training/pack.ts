// Which sequences of a training batch run as one pack (node/engine/driver.ts packedGrad): sequences that begin with
// the same ids (an agent's system prompt and tool schemas, thousands of tokens, lead every turn of its sessions) run
// their shared prefix once, then each its own suffix, with a gradient equal to running each alone. A pack costs one
// sequence of P + Σ (nᵢ − P) tokens instead of Σ nᵢ; but each of its rows attends over the whole pack (the mask
// hides the other suffixes, and the products are still computed), so for a short prefix and long suffixes packing
// costs more than it saves. The grouping therefore takes a pack only where an estimate of its cost (runCost) is
// below that of running its members alone, and keeps a pack within PACK_SPAN times its longest member, which bounds
// its memory.
import { isMoe, type ModelConfig } from '../engine/families/registry.ts';

/**
 * The shortest shared prefix that packs. Below it the saving is under 128 tokens of each sequence's layers, while a
 * pack's [T, T] mask and RoPE tables are built for its one layout every step (a lone sequence's are cached per
 * bucket), and the ids every chat turn shares (a chat template's opening, a short default system prompt: tens of
 * tokens) would pack turns whose suffixes are their whole cost.
 */
export const PACK_MIN_PREFIX = 128;

/**
 * The longest a pack may be, as a multiple of its longest member's length. Its attention buffers ([heads, T, T]
 * scores, the largest of a long sequence's step) are then at most PACK_SPAN² = 4 times, and its per-token buffers
 * twice, those of its longest member alone, which the per-sequence step holds anyway. A wider span saves little
 * more: with prefix P and suffixes of S tokens a pack of span 2 already holds about 1 + P/S + 1 members (a 7.6k
 * prefix with 300-token turns: 27), so the prefix is paid once per 27 sequences instead of once per sequence.
 */
export const PACK_SPAN = 2;

/** What the grouping reads of a sequence: its ids and its first scored token. */
export interface PackInput {
  tokens: readonly number[];
  start: number;
}

/** A group of a batch's sequences (indices into it): a pack sharing `prefix` ids, or one sequence alone (prefix 0). */
export interface PackGroup {
  prefix: number;
  members: number[];
}

/**
 * A relative estimate of the cost of one forward and backward over T (padded) tokens: per layer, the projections'
 * and the MLP's multiply-adds per token, and per pair of tokens the attention's (q·k and p·v per head), plus
 * ATTENTION_PASSES passes over each score (the mask's add, the softmax, and their backward). The MoE graph runs every
 * expert (moe.ts), so it counts E experts. Only ratios of it are used.
 */
export function runCost(c: ModelConfig, T: number): number {
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  const mlp = isMoe(c) ? c.numExperts * (3 * c.hiddenSize * c.moeIntermediateSize + c.hiddenSize) : 3 * c.hiddenSize * c.intermediateSize;
  const perToken = c.hiddenSize * (2 * q + 2 * kv) + mlp;
  const perPair = c.numHeads * (2 * c.headDim + ATTENTION_PASSES);
  return c.numLayers * (perToken * T + perPair * T * T);
}

/** Elementwise passes over each attention score, counted as one multiply-add each (an estimate, not a measurement). */
const ATTENTION_PASSES = 8;

function compareIds(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

function commonPrefix(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/**
 * Groups a batch into packs and lone sequences. The sequences are sorted by their ids, so those sharing a leading
 * run sit side by side and a run's common prefix is the least of its neighbours' (clamped to every member's first
 * scored token: a pack's shared rows are context only). From the first sequence not yet placed, the candidates are
 * the sequences after it while the shared prefix stays ≥ minPrefix and the pack within `span` × its longest member;
 * of the packs made of the first k candidates, the one that saves the most estimated cost against running its
 * members alone is taken (none saving, the sequence runs alone), and the walk goes on after it. Every k is weighed,
 * not only the next one: the shape buckets make cost a step function (a pack of two may pad to the next bucket and
 * lose, where a pack of seven in the same bucket wins). `cost(n)`: the cost of one run over n tokens (padding
 * included). span 0 packs nothing. Every index appears in exactly one group; groups come in the order of their
 * first member.
 */
export function packGroups(seqs: readonly PackInput[], o: { cost: (tokens: number) => number; span?: number; minPrefix?: number }): PackGroup[] {
  const span = o.span ?? PACK_SPAN;
  const minPrefix = o.minPrefix ?? PACK_MIN_PREFIX;
  if (span <= 0) return seqs.map((_, i) => ({ prefix: 0, members: [i] }));
  const order = seqs.map((_, i) => i).sort((a, b) => compareIds(seqs[a]!.tokens, seqs[b]!.tokens) || a - b);
  const alone = seqs.map((s) => o.cost(s.tokens.length));
  const groups: PackGroup[] = [];
  let at = 0;
  while (at < order.length) {
    const first = seqs[order[at]!]!;
    let prefix = first.start;
    let longest = first.tokens.length;
    let aloneSum = alone[order[at]!]!;
    let best: PackGroup = { prefix: 0, members: [order[at]!] };
    let bestSaving = 0;
    for (let k = at + 1; k < order.length; k++) {
      const s = seqs[order[k]!]!;
      const shared = Math.min(prefix, commonPrefix(seqs[order[k - 1]!]!.tokens, s.tokens), s.start);
      if (shared < minPrefix) break;
      prefix = shared;
      longest = Math.max(longest, s.tokens.length);
      const members = order.slice(at, k + 1);
      const length = prefix + members.reduce((n, i) => n + seqs[i]!.tokens.length - prefix, 0);
      if (length > span * longest) break;
      aloneSum += alone[order[k]!]!;
      const saving = aloneSum - o.cost(length);
      if (saving > bestSaving) {
        best = { prefix, members };
        bestSaving = saving;
      }
    }
    groups.push(best);
    at += best.members.length;
  }
  return groups.sort((a, b) => Math.min(...a.members) - Math.min(...b.members));
}
