// The learning curve through the product, on the small LM: what `rein demo` prints and bench/learning.ts repeats.
// A fresh Rein home on the model with the balanced preset as every model gets it, and the serve-model stack
// (serving/stack.ts: the capture proxy in front of Rein's own model server with the active adapter). Each round:
//   1. N answers to training prompts are sampled through the proxy, which captures them as any client's answers are
//      (tokens and the sampled distribution's logprobs μ, the producing version from the server's headers);
//   2. each captured turn is rated good or bad by a style rule (a corpus.ts dimension, e.g. "ends with a question")
//      through the core;
//   3. one round trains through the scheduler and the worker, as a user's does; its gate decides whether it goes live;
//   4. the held-out preferred-style rate is measured on fixed held-out prompts, sampled from the model server (not
//      through the proxy, so nothing is captured) with the version now active: what a user gets after the round.
// The held-out prompts (128 of the corpus's 300 distinct prompts, one fixed split) never train. Held-out answers use
// the same seed per prompt in every measurement, so a change is a paired difference (common random numbers).
// Off-policy: in a second fresh home, `teacher` answers from a second sampler (the corpus generator with the rule's
// style at 50%) are captured as plain text (no tokens: KTO), rated by the rule, and trained in one round.
// KL and its budget are read from the run's metrics, whatever the gate calls them (runKl below).
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Rng } from '../../common/engine/rng.ts';
import { meanEstimate, rateEstimate, type RateEstimate } from '../../common/training/intervals.ts';
import { createCore, type ReinCore } from '../core/core.ts';
import { readOrCreateToken, resolveHome } from '../home.ts';
import { startServeStack, type ServeStack } from '../serving/stack.ts';
import { allPrompts, sampleDialogue, STYLES, styleRule, type StyleName } from './corpus.ts';
import { SMALL_LM_DIR } from './small-lm.ts';

/** A held-out rate with its 95% Wilson interval. */
export type RatePoint = RateEstimate;

/** after − before on the same prompts and sampling seeds, with its 95% interval (normal approximation of the paired mean). */
export interface Change {
  mean: number;
  ci: [number, number];
}

export interface RoundPoint extends RatePoint {
  round: number;
  /** Good ratings among this round's `rated`. */
  good: number;
  rated: number;
  /** Answers sampled this round; with reward.ask unsure, the ones not asked about (sampled − rated) stay unrated. */
  sampled: number;
  /** How many of the rated turns the proxy stored on-policy (tokens and μ of the sampled distribution). */
  onPolicy: number;
  /** The run's status (succeeded / failed) and the new version's (active / rejected), with the gate's reason. */
  run: string;
  version: number | null;
  status: string;
  reason: string | null;
  kl: number | null;
  budget: number | null;
  /** Change of the held-out rate from before the first round. */
  change: Change;
  /**
   * Side effects: every style the rule does not judge, its rate on the same held-out answers and its paired change
   * from before the first round. A round that learns the rule should leave these where they were.
   */
  others: StyleEffect[];
  seconds: number;
}

export interface StyleEffect {
  name: StyleName;
  rate: number;
  change: Change;
}

export interface OffPolicyResult {
  teacher: number;
  good: number;
  status: string;
  reason: string | null;
  kl: number | null;
  budget: number | null;
  after: RatePoint;
  change: Change;
}

export interface LearningResult {
  rule: StyleName;
  description: string;
  seed: number;
  held: number;
  n: number;
  before: RatePoint;
  after: RatePoint;
  rounds: RoundPoint[];
  offPolicy: OffPolicyResult | null;
}

export interface LearningOptions {
  /** A work folder: each experiment gets a Rein home under it. */
  root: string;
  rule: StyleName;
  seed: number;
  rounds: number;
  /** Answers sampled and rated per round. */
  n: number;
  /** Held-out prompts, at most HELD_OUT_MAX. */
  held: number;
  /** Teacher answers for the off-policy run; 0 skips it. */
  teacher: number;
  /**
   * Active learning (setting reward.ask, default always): with unsure, each answer is rated only when the core's
   * rewardAsk verb says to ask, as the popup does; the others stay unrated (ignored, like a dismissed popup).
   */
  ask?: 'always' | 'unsure';
  /** Stop after the first round whose version is active with a held-out rate at least this (default: run every round). */
  stopAt?: number;
  /** The HF model folder; default the committed small LM. */
  modelDir?: string;
  maxTokens?: number;
  log?: (line: string) => void;
  onRound?: (p: RoundPoint) => void;
}

/** The corpus's 300 distinct prompts in one fixed order; the first HELD_OUT_MAX are held out from every training round. */
const PROMPTS = (() => {
  const ps = allPrompts();
  const rng = new Rng(0).fork('held-out split');
  for (let i = ps.length - 1; i > 0; i--) {
    const j = Math.floor(rng.uniform() * (i + 1));
    [ps[i], ps[j]] = [ps[j]!, ps[i]!];
  }
  return ps;
})();
export const HELD_OUT_MAX = 128;
export const HELD_OUT_PROMPTS: readonly string[] = PROMPTS.slice(0, HELD_OUT_MAX);
export const TRAINING_PROMPTS: readonly string[] = PROMPTS.slice(HELD_OUT_MAX);

export const TEACHER_RATE = 0.5;

export function ratePoint(hits: readonly boolean[]): RatePoint {
  return rateEstimate(hits.filter(Boolean).length, hits.length);
}

/** The paired change after − before (each d_i in {-1, 0, 1}) with mean ± 1.96·sd/√n. */
export function pairedChange(before: readonly boolean[], after: readonly boolean[]): Change {
  const { mean, ci } = meanEstimate(after.map((a, i) => Number(a) - Number(before[i])));
  return { mean, ci };
}

/**
 * The KL the gate measured and its budget, from a run's metrics. The gate's fields are its own business (a parallel
 * rewrite measures per-token KL to the parent); this reads the first numeric field under `gate` whose name says KL,
 * and the one whose name says budget.
 */
export function runKl(metrics: unknown): { kl: number | null; budget: number | null } {
  const gate = (metrics as { gate?: unknown } | null)?.gate;
  if (gate === null || typeof gate !== 'object') return { kl: null, budget: null };
  const nums = Object.entries(gate as Record<string, unknown>).filter((e): e is [string, number] => typeof e[1] === 'number');
  const budget = nums.find(([k]) => /budget/i.test(k))?.[1] ?? null;
  const kl = nums.find(([k]) => /kl/i.test(k) && !/budget/i.test(k))?.[1] ?? null;
  return { kl, budget };
}

interface Home {
  core: ReinCore;
  stack: ServeStack;
  token: string;
  close(): Promise<void>;
}

async function openHome(dir: string, modelDir: string, log: (line: string) => void): Promise<Home> {
  mkdirSync(dir, { recursive: true });
  const home = resolveHome({ REIN_HOME: dir });
  const core = createCore({ home });
  try {
    await core.call('setSettings', { values: { 'model.active': modelDir, 'training.auto': false, 'training.preset': 'balanced', 'proxy.upstream': null } }, 'cli');
    const token = readOrCreateToken(home);
    // One llama.cpp thread: the learning loop shares the machine with the training worker, and llama.cpp's spinning
    // threads on a busy 2-core machine took 90 s for a 22-token answer that one thread samples in 0.3 s.
    const stack = await startServeStack({ core, token, port: 0, threads: 1, log });
    return {
      core,
      stack,
      token,
      async close() {
        try {
          await stack.close();
        } finally {
          core.close();
        }
      },
    };
  } catch (e) {
    core.close();
    throw e;
  }
}

async function chat(baseUrl: string, token: string, prompt: string, seed: number, maxTokens: number): Promise<string> {
  const res = await fetch(`${baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ model: 'rein', messages: [{ role: 'user', content: prompt }], temperature: 1, top_p: 1, max_tokens: maxTokens, seed }),
  });
  const body = (await res.json()) as { choices?: { message?: { content?: string } }[]; error?: { message?: string } };
  if (!res.ok) throw new Error(`POST ${baseUrl}/chat/completions: ${res.status} ${body.error?.message ?? ''}`);
  return body.choices?.[0]?.message?.content ?? '';
}

/** The held-out answers of the version the model server runs now (the same prompts and sampling seeds each time). */
async function heldOut(h: Home, o: LearningOptions, heldSeed: number): Promise<string[]> {
  const out: string[] = [];
  for (const [i, prompt] of HELD_OUT_PROMPTS.slice(0, o.held).entries()) {
    out.push(await chat(h.stack.model!.url, h.token, prompt, heldSeed * 1000 + i, o.maxTokens ?? 96));
  }
  return out;
}

/** Each style other than `rule`: its rate on `after` and the paired change from `before` (the same prompts and seeds). */
export function sideEffects(rule: StyleName, before: readonly string[], after: readonly string[]): StyleEffect[] {
  return STYLES.filter((s) => s.name !== rule).map((s) => {
    const hits = after.map((a) => s.detect(a));
    return { name: s.name, rate: hits.filter(Boolean).length / hits.length, change: pairedChange(before.map((a) => s.detect(a)), hits) };
  });
}

/** Trains one round through the scheduler and the worker and reads what it did. */
async function trainRound(core: ReinCore): Promise<{ run: string; version: number | null; status: string; reason: string | null; kl: number | null; budget: number | null }> {
  const { runId } = await core.call('startTraining', {}, 'cli');
  await core.scheduler.idle();
  const run = (await core.call('listRuns', {}, 'cli')).find((r) => r.id === runId);
  if (run === undefined) throw new Error(`run ${runId} is missing after training`);
  const v = run.adapterVersion === null ? undefined : (await core.call('listAdapters', {}, 'cli')).find((a) => a.version === run.adapterVersion);
  return { run: run.status, version: v?.version ?? null, status: v?.status ?? run.status, reason: v?.reason ?? (run.error === null ? null : String(run.error)), ...runKl(run.metrics) };
}

/**
 * Rates every unrated turn of `source` by the rule, each one the core's rewardAsk says to ask about (all of them
 * unless reward.ask is unsure); a turn not asked about is ignored, as a popup that never showed. Returns the good
 * count, how many were rated, and how many were captured on-policy.
 */
async function rateUnrated(core: ReinCore, source: string, rule: (text: string) => boolean, expected: number): Promise<{ good: number; rated: number; onPolicy: number }> {
  const turns = (await core.call('listTurns', { source, state: 'unrated', limit: 1000 }, 'cli')).items;
  if (turns.length !== expected) throw new Error(`expected ${expected} captured ${source} turns to rate, found ${turns.length}`);
  let good = 0;
  let rated = 0;
  for (const t of turns) {
    if (!(await core.call('rewardAsk', { turnId: t.id }, 'cli')).ask) {
      await core.call('ignoreTurn', { turnId: t.id }, 'cli');
      continue;
    }
    rated++;
    const full = await core.call('getTurn', { turnId: t.id }, 'cli');
    const ok = rule(full.response);
    if (ok) good++;
    await core.call('rate', { turnId: t.id, value: ok ? 'good' : 'bad', rater: 'rule' }, 'cli');
  }
  return { good, rated, onPolicy: turns.filter((t) => t.onPolicy).length };
}

export async function runLearning(o: LearningOptions): Promise<LearningResult> {
  if (o.held < 1 || o.held > HELD_OUT_MAX) throw new Error(`held must be 1..${HELD_OUT_MAX}, got ${o.held}`);
  const log = o.log ?? (() => {});
  const modelDir = o.modelDir ?? SMALL_LM_DIR;
  const rule = styleRule(o.rule);
  const maxTokens = o.maxTokens ?? 96;
  const heldSeed = 10_000 + o.seed;
  const rounds: RoundPoint[] = [];
  let before: string[];
  let last: string[];
  const h = await openHome(path.join(o.root, `home-${o.rule}-${o.seed}`), modelDir, log);
  try {
    if (h.stack.model === null) throw new Error('the learning loop needs Rein\'s own model server (proxy.upstream must be null)');
    await h.core.call('setSettings', { values: { 'reward.ask': o.ask ?? 'always' } }, 'cli');
    before = await heldOut(h, o, heldSeed);
    last = before;
    const rng = new Rng(o.seed).fork(`training prompts ${o.rule}`);
    for (let r = 1; r <= o.rounds; r++) {
      const t0 = performance.now();
      for (let i = 0; i < o.n; i++) {
        const prompt = TRAINING_PROMPTS[Math.floor(rng.uniform() * TRAINING_PROMPTS.length)]!;
        await chat(h.stack.url, h.token, prompt, o.seed * 1_000_003 + r * 10_007 + i, maxTokens);
      }
      await h.stack.proxy.idle();
      const { good, rated, onPolicy } = await rateUnrated(h.core, 'proxy', rule, o.n);
      const trained = await trainRound(h.core);
      last = await heldOut(h, o, heldSeed);
      const p: RoundPoint = {
        round: r,
        ...ratePoint(last.map(rule)),
        good,
        rated,
        sampled: o.n,
        onPolicy,
        ...trained,
        change: pairedChange(before.map(rule), last.map(rule)),
        others: sideEffects(o.rule, before, last),
        seconds: (performance.now() - t0) / 1000,
      };
      rounds.push(p);
      o.onRound?.(p);
      if (o.stopAt !== undefined && p.status === 'active' && p.rate >= o.stopAt) break;
    }
  } finally {
    await h.close();
  }
  let offPolicy: OffPolicyResult | null = null;
  if (o.teacher > 0) {
    const t = await openHome(path.join(o.root, `home-${o.rule}-${o.seed}-teacher`), modelDir, log);
    try {
      const rng = new Rng(o.seed).fork(`teacher ${o.rule}`);
      const held = new Set(HELD_OUT_PROMPTS);
      for (let i = 0; i < o.teacher; ) {
        const d = sampleDialogue(rng, { [o.rule]: TEACHER_RATE });
        if (held.has(d.prompt)) continue;
        await t.core.call('captureTurn', { source: 'api', eventId: `teacher-${i++}`, prompt: d.prompt, response: d.answer }, 'cli');
      }
      const { good } = await rateUnrated(t.core, 'api', rule, o.teacher);
      const trained = await trainRound(t.core);
      const after = await heldOut(t, o, heldSeed);
      offPolicy = { teacher: o.teacher, good, status: trained.status, reason: trained.reason, kl: trained.kl, budget: trained.budget, after: ratePoint(after.map(rule)), change: pairedChange(before.map(rule), after.map(rule)) };
    } finally {
      await t.close();
    }
  }
  return {
    rule: o.rule,
    description: STYLES.find((s) => s.name === o.rule)!.description,
    seed: o.seed,
    held: o.held,
    n: o.n,
    before: ratePoint(before.map(rule)),
    after: ratePoint(last.map(rule)),
    rounds,
    offPolicy,
  };
}
