// Training presets: one table (ARCHITECTURE §4). A round's hyper-parameters come from the preset name, the model's
// size bucket (by active parameters) and whether it is a mixture of experts. `custom` starts from `balanced` and
// overrides any field; every field is validated by TrainingConfigSchema, whose descriptions are the help text that
// the CLI, the API (`describePresets`) and the UI show.
//
// Starting points are ReinforceClaw's published numbers: an LR anchor of 5e-6 (at 7B active parameters), β 0.002 /
// 0.001 / 0.0005 (halved for MoE), 24 / 32 / 48 steps, trajectory bands [0.996, 1.001] / [0.994, 1.002] / [0.992,
// 1.004], rank 16 (8 for the largest bucket, +8 for MoE), and MIS-PO's token ratio clip [0.5, 2] for every size.
// The LR size rule and the sparsity factor are ours (lrForSize below); one rule for every model, generated or real.
import { z } from 'zod';
import { BadInputError } from '../errors.ts';

export const PRESET_NAMES = ['careful', 'balanced', 'aggressive'] as const;
export type PresetName = (typeof PRESET_NAMES)[number];
export type PresetChoice = PresetName | 'custom';

export const SIZE_BUCKETS = ['tiny', 'small', 'medium', 'large', 'xlarge'] as const;
export type SizeBucket = (typeof SIZE_BUCKETS)[number];

/** Upper bounds (exclusive) of active parameters per bucket; xlarge is everything above. */
export const BUCKET_LIMITS: Record<Exclude<SizeBucket, 'xlarge'>, number> = {
  tiny: 100e6, // generated demo and test models, small research models
  small: 2e9, // Qwen2.5-0.5B/1.5B, Llama-3.2-1B
  medium: 9e9, // 3B-8B
  large: 35e9, // 14B-32B
};

export const TrainingConfigSchema = z.strictObject({
  lr: z.number().positive().max(1).describe('AdamW learning rate of the LoRA tensors.'),
  beta: z.number().min(0).max(1).describe('β: weight of the k3 KL penalty to the base model (adapter off).'),
  steps: z.number().int().min(1).max(10_000).describe('Optimizer steps in one round.'),
  batchSize: z.number().int().min(1).max(1024).describe('Rated turns per optimizer step (each weighs 1/batch).'),
  bandLow: z.number().positive().max(1).describe('Lower edge of the trajectory band for ρ̄ = exp(mean(π − μ)).'),
  bandHigh: z.number().min(1).max(10).describe('Upper edge of the trajectory band for ρ̄.'),
  drift: z
    .enum(['scale', 'reject'])
    .describe('Outside the band: scale the turn down by min(1, ρ̄/low, high/ρ̄) (stop-gradient), or drop it for that step.'),
  ratioClipLow: z.number().positive().max(1).describe('MIS-PO token ratio clip, lower bound (0.5).'),
  ratioClipHigh: z.number().min(1).max(100).describe('MIS-PO token ratio clip, upper bound (2).'),
  advantageClip: z.number().positive().max(100).describe('|A| = |r − EMA| is clipped to this (2).'),
  rank: z.number().int().min(1).max(512).describe('LoRA rank r.'),
  alpha: z.number().positive().max(4096).describe('LoRA alpha; the update is scaled by alpha / r.'),
  maxGradNorm: z.number().min(0).max(1000).describe('Global gradient-norm clip (0 = off).'),
  weightDecay: z.number().min(0).max(1).describe('AdamW decoupled weight decay.'),
  ktoBeta: z.number().positive().max(100).describe('KTO β: sharpness of the sigmoid on the log-ratio to the base.'),
  ktoDesirable: z.number().min(0).max(100).describe('KTO weight λ_D of desirable (good) off-policy turns.'),
  ktoUndesirable: z.number().min(0).max(100).describe('KTO weight λ_U of undesirable (bad) off-policy turns.'),
  epochs: z.number().positive().max(100).describe('Passes over the trained ratings: a round runs at least ceil(epochs × trained / batch) steps, so every trained rating is drawn.'),
  heldoutFraction: z.number().min(0).max(0.5).describe("Share of a round's pending ratings held out (seeded, at random) to score the candidate; they stay pending and train in the next round."),
  gateTurns: z.number().int().min(0).max(10_000).describe('Most older ratings that no version of the active lineage trained on (rolled-back ones) added to the held-out set.'),
  klBudget: z.number().positive().max(100).describe("Largest mean per-token k3 KL of the candidate to its parent over the held-out responses that the gate accepts (per round)."),
  maxTokens: z.number().int().min(16).max(32_768).describe('Longest prompt + response, in tokens, used for training (longer turns are cut from the left of the prompt).'),
  seed: z.number().int().min(0).max(2 ** 31 - 1).describe('Seed of the adapter init and the batch order.'),
});
export type TrainingConfig = z.infer<typeof TrainingConfigSchema>;
export const CustomTrainingSchema = TrainingConfigSchema.partial();
export type CustomTraining = z.infer<typeof CustomTrainingSchema>;

export interface ModelShape {
  /** Parameters used per token (all of them for a dense model). */
  activeParams: number;
  /** Every parameter (experts included). */
  totalParams: number;
  moe: boolean;
}

interface PresetRow {
  lrFactor: number;
  beta: number;
  steps: number;
  band: [number, number];
  klBudget: number;
}

/**
 * The per-round KL budget from MIS-PO's token trust region [0.5, 2] (the ratio clip below): the gate measures the
 * mean per-token k3 = (ρ − 1) − log ρ of the candidate against its parent on held-out responses (common/training/
 * gate.ts), and a round whose every token moved to a ratio ρ has k3(ρ). At the clip's edges k3(0.5) = 0.193 and
 * k3(2) = 0.307. balanced allows the tighter edge: on average no further than the trust region lets one token move.
 * aggressive allows the looser edge. careful allows half the region in log space, ρ ∈ [1/√2, √2], at its tighter
 * edge k3(1/√2) = 0.054. The budgets follow from the band, not from where any round's KL landed.
 */
const k3At = (rho: number): number => rho - 1 - Math.log(rho);
export const KL_BUDGETS = {
  careful: Math.min(k3At(Math.SQRT1_2), k3At(Math.SQRT2)),
  balanced: Math.min(k3At(0.5), k3At(2)),
  aggressive: Math.max(k3At(0.5), k3At(2)),
} as const;

/**
 * A round stops before its last step once the mean per-token KL of its batch to the parent version (the gate's k3
 * estimator) reaches this share of the preset's KL budget. Without it the step count does not follow the data: a few
 * ratings are drawn again and again (six ratings of the small LM at the balanced preset's 32 steps ended 0.31 nats a
 * token from the parent on held-out replies, over the budget of 0.193, and the gate rejected the round). Half: the
 * estimate comes from the batch (5 to 8 sequences), the step that measured it has already updated the adapter, and the
 * held-out replies the gate scores are not the ones trained, so the stop leaves the other half for all three.
 */
export const EARLY_STOP_KL_SHARE = 0.5;

/** The per-preset column of the table. */
export const PRESETS: Record<PresetName, PresetRow> = {
  careful: { lrFactor: 0.5, beta: 0.002, steps: 24, band: [0.996, 1.001], klBudget: KL_BUDGETS.careful },
  balanced: { lrFactor: 1, beta: 0.001, steps: 32, band: [0.994, 1.002], klBudget: KL_BUDGETS.balanced },
  aggressive: { lrFactor: 2, beta: 0.0005, steps: 48, band: [0.992, 1.004], klBudget: KL_BUDGETS.aggressive },
};

/** The per-size column: the LoRA rank. The learning rate is not a bucket's: it follows lrForSize. */
export const SIZES: Record<SizeBucket, { rank: number }> = {
  tiny: { rank: 16 },
  small: { rank: 16 },
  medium: { rank: 16 },
  large: { rank: 16 },
  xlarge: { rank: 8 },
};

/** ReinforceClaw's LR, at the size it was published for (7B active parameters). */
export const LR_ANCHOR = 5e-6;
export const LR_ANCHOR_PARAMS = 7e9;

/**
 * The balanced learning rate for a model of N active parameters: LR_ANCHOR · √(7e9 / N).
 * Adam's stable step for a hidden matrix shrinks as 1/width (μP: Yang et al. 2022, "Tensor Programs V", Table 3),
 * and a transformer's N ≈ 12·L·H² grows about as width² (L and H grow together across a family), so 1/√N stands
 * for 1/width without needing the config. It gives 1.9e-5 at 0.5B, 5e-6 at 7B, 1.6e-6 at 70B (the LoRA-on-small-
 * model practice of 1e-5..1e-4 below 1B) and 4.5e-4 for the 0.88M-parameter small LM
 * that rein demo trains. Every model, generated
 * or real, gets this rule: nothing is set per bucket or for tests.
 */
export function lrForSize(activeParams: number): number {
  return LR_ANCHOR * Math.sqrt(LR_ANCHOR_PARAMS / activeParams);
}

export function sizeBucket(activeParams: number): SizeBucket {
  if (!Number.isFinite(activeParams) || activeParams <= 0) throw new BadInputError(`activeParams must be positive, got ${activeParams}`, 'activeParams');
  for (const b of ['tiny', 'small', 'medium', 'large'] as const) if (activeParams < BUCKET_LIMITS[b]) return b;
  return 'xlarge';
}

const DEFAULTS = {
  batchSize: 8,
  drift: 'scale' as const,
  ratioClipLow: 0.5,
  ratioClipHigh: 2,
  advantageClip: 2,
  maxGradNorm: 1,
  weightDecay: 0,
  ktoBeta: 0.1,
  ktoDesirable: 1,
  ktoUndesirable: 1,
  // One pass over the trained ratings: every pending rating gives a gradient once (issue #12, "nothing is burned").
  epochs: 1,
  // About a fifth of each round's pending ratings score the candidate (issue #12: "hold out about 20%").
  heldoutFraction: 0.2,
  // Each scored turn costs up to three forwards (candidate, base, parent adapter): 16 keep a 0.5B gate to minutes.
  gateTurns: 16,
  maxTokens: 2048,
  seed: 0,
};

/** One preset resolved for one model. */
export function presetConfig(name: PresetName, shape: ModelShape): TrainingConfig {
  const row = PRESETS[name];
  const bucket = sizeBucket(shape.activeParams);
  const size = SIZES[bucket];
  // Total-size factor: a MoE's experts see ~active/total of the tokens each, so their LoRA tensors get fewer updates;
  // the 4th root keeps the boost modest (at most ×1.78 for a 10% active share).
  const sparsity = shape.moe && shape.totalParams > shape.activeParams ? Math.min(2, (shape.totalParams / shape.activeParams) ** 0.25) : 1;
  const rank = size.rank + (shape.moe ? 8 : 0);
  return {
    ...DEFAULTS,
    lr: lrForSize(shape.activeParams) * row.lrFactor * sparsity,
    beta: shape.moe ? row.beta / 2 : row.beta,
    steps: row.steps,
    bandLow: row.band[0],
    bandHigh: row.band[1],
    rank,
    alpha: 2 * rank,
    klBudget: row.klBudget,
  };
}

/** The config a round uses: a preset, or `custom` = balanced overridden by the validated custom fields. */
export function resolveTrainingConfig(choice: PresetChoice, shape: ModelShape, custom: unknown = {}): TrainingConfig {
  if (choice !== 'custom') return presetConfig(choice, shape);
  const parsed = CustomTrainingSchema.safeParse(custom ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.map(String).join('.');
    throw new BadInputError(`training.custom.${field}: ${issue.message}`, `training.custom.${field}`);
  }
  const merged = { ...presetConfig('balanced', shape), ...parsed.data };
  if (merged.bandLow >= merged.bandHigh) throw new BadInputError(`training.custom: bandLow (${merged.bandLow}) must be below bandHigh (${merged.bandHigh})`, 'training.custom.bandLow');
  if (merged.ratioClipLow >= merged.ratioClipHigh) throw new BadInputError('training.custom: ratioClipLow must be below ratioClipHigh', 'training.custom.ratioClipLow');
  return merged;
}

export interface PresetField {
  key: keyof TrainingConfig;
  help: string;
  jsonSchema: unknown;
}

export interface PresetTable {
  bucket: SizeBucket;
  shape: ModelShape;
  presets: Record<PresetName, TrainingConfig>;
  fields: PresetField[];
  /**
   * A round per preset for `pending` new ratings (common/training/estimate.ts): its time from the model's size, the
   * steps it runs and how many of the ratings it holds out.
   */
  roundTime?: { pending: number; seconds: Record<PresetChoice, number>; steps: Record<PresetChoice, number>; heldout: Record<PresetChoice, number> };
}

/** Every preset resolved for a model shape, and every field with its help: what `describePresets` answers. */
export function describePresets(shape: ModelShape): PresetTable {
  const presets = Object.fromEntries(PRESET_NAMES.map((n) => [n, presetConfig(n, shape)])) as Record<PresetName, TrainingConfig>;
  const fields = (Object.keys(TrainingConfigSchema.shape) as (keyof TrainingConfig)[]).map((key) => {
    const s = TrainingConfigSchema.shape[key];
    return { key, help: s.description ?? '', jsonSchema: z.toJSONSchema(s) };
  });
  return { bucket: sizeBucket(shape.activeParams), shape, presets, fields };
}
