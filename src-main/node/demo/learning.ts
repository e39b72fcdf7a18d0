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
// The prompts follow the corpus the model was pretrained on (its BUILD.json): for the styles corpus, 128 of its 300
// distinct prompts are held out (one fixed split); for the prompted corpus, 128 prompts of the compositions its
// pretraining never saw are held out and rounds draw from the others, so the held-out figure is generalisation to
// new compositions. Held-out prompts never train. Held-out answers use the same seed per prompt in every
// measurement, so a change is a paired difference (common random numbers). A conditional rule (`when`: a style
// exactly when the prompt names one of some languages) needs the prompted corpus and is scored as conditional
// accuracy; each round also reports the style's rate inside and outside those languages.
// Off-policy: in a second fresh home, `teacher` answers from a second sampler (the corpus generator with the rule's
// style at 50%) are captured as plain text (no tokens: KTO), rated by the rule, and trained in one round.
// KL and its budget are read from the run's metrics, whatever the gate calls them (runKl below).
// Implicit feedback (`explicit` < 1): the simulated user clicks Good or Bad on that share of a round's answers and,
// on each of the others, writes a follow-up in the same session through the proxy, as a client does: a phrasing of the
// weak-label reader's held-out split (common/implicit/fixtures/followups.jsonl, split test, never tuned on) that says
// what the rule says of the answer. The proxy stores it as the session's next turn, core/signals.ts records it as a
// `followup` signal, and the production reader labels it, so a weak label's error is the reader's on real phrasings.
// With training.implicit weighted the round trains those labels (data.ts weakLabelled); `confirm` is the share of
// labels the user confirms on the card (or flips, where the reader misread), each one a click.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Rng } from '../../common/engine/rng.ts';
import { meanEstimate, rateEstimate, type RateEstimate } from '../../common/training/intervals.ts';
import { DEFAULT_THRESHOLD, readText } from '../../common/implicit/reader.ts';
import { parseCorpus } from '../../common/implicit/score.ts';
import { createCore, type ReinCore } from '../core/core.ts';
import { readOrCreateToken, resolveHome } from '../home.ts';
import type { TurnSummary } from '../../common/domain.ts';
import { startServeStack, type ServeStack } from '../serving/stack.ts';
import { shuffle } from '../training/data.ts';
import { allPrompts, sampleDialogue, STYLES, styleRule, type StyleName } from './corpus.ts';
import { LANGS, sampleDialogue as samplePromptedDialogue, samplePrompt } from './prompted.ts';
import { CORPORA, SMALL_LM_DIR, type CorpusName } from './small-lm.ts';

/** A held-out rate with its 95% Wilson interval. */
export type RatePoint = RateEstimate;

/** after − before on the same prompts and sampling seeds, with its 95% interval (normal approximation of the paired mean). */
export interface Change {
  mean: number;
  ci: [number, number];
}

export interface RoundPoint extends RatePoint {
  round: number;
  /** Good ratings among this round's `rated` (as the user clicked them: after `noise` flipped some). */
  good: number;
  rated: number;
  /** Clicks of this round that a noisy rater (LearningOptions.noise) gave the wrong way. */
  flipped: number;
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
  /** A conditional rule's style rate on the held-out prompts that name one of its languages, and on the others. */
  split: { inside: number; outside: number } | null;
  /** The user's clicks this round: explicit ratings and weak labels confirmed or flipped on the card. */
  clicks: number;
  /** The follow-ups of this round and the weak labels its run trained; null when every answer was rated (explicit 1). */
  implicit: ImplicitPoint | null;
  seconds: number;
}

export interface ImplicitPoint {
  /** Follow-ups written (one per answer not rated by a click). */
  followups: number;
  /** Of them, how many the reader labels at its threshold, and how many of those say what the rule says. */
  read: number;
  readRight: number;
  /** Weak labels the user confirmed or flipped on the card (clicks; they train as ratings). */
  confirmed: number;
  /** The run's weak labels (its metrics' `weak`): selected, drawn into a step, and selected ones the rule agrees with. */
  labels: number;
  drawn: number;
  agree: number;
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
  when: readonly string[] | null;
  corpus: CorpusName;
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
  /**
   * A conditional rule: an answer is good when it has the rule's style exactly when its prompt names one of these
   * languages (and lacks it otherwise), scored on held-out prompts as conditional accuracy. Needs a model pretrained
   * on the prompted corpus, whose prompts name a language; null or absent: the plain rule.
   */
  when?: readonly string[] | null;
  maxTokens?: number;
  /** The share of each round's answers the simulated user rates with a click (default 1); the others get a follow-up. */
  explicit?: number;
  /** The setting training.implicit for the run (absent: the product's default). */
  implicit?: 'off' | 'confirm-only' | 'weighted';
  /** The share of offered weak labels the user confirms (or flips where the reader misread) on the card; default 0. */
  confirm?: number;
  /**
   * A noisy rater: each click is the wrong way (Good for an answer the rule calls Bad, and the other way) with this
   * probability, independently, from a seeded generator of its own; default 0. The held-out scores stay the rule's.
   */
  noise?: number;
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

/** A prompt of the loop, with the language it names (prompted corpus) or null. */
export interface LoopPrompt {
  text: string;
  lang: string | null;
}

/** Where the loop's prompts come from, by the corpus the model was pretrained on. */
export interface PromptSet {
  corpus: CorpusName;
  /** The fixed held-out prompts, HELD_OUT_MAX of them; no training round draws one. */
  held: readonly LoopPrompt[];
  train(rng: Rng): LoopPrompt;
  /** A second sampler's dialogue (the corpus generator with `style` at `rate`), on a training prompt. */
  teacher(rng: Rng, style: StyleName, rate: number): { prompt: LoopPrompt; answer: string };
  /** Tokens an answer may take: the prompted corpus's answers (code, prose, a list) run longer. */
  maxTokens: number;
}

/** The corpus the model in `dir` was pretrained on, from its BUILD.json (a build before the prompted corpus says none: styles). */
export function modelCorpus(dir: string): CorpusName {
  const file = path.join(dir, 'BUILD.json');
  if (!existsSync(file)) return 'styles';
  const c = (JSON.parse(readFileSync(file, 'utf8')) as { corpus?: unknown }).corpus;
  return (CORPORA as readonly unknown[]).includes(c) ? (c as CorpusName) : 'styles';
}

const STYLES_SET: PromptSet = {
  corpus: 'styles',
  held: HELD_OUT_PROMPTS.map((text) => ({ text, lang: null })),
  train: (rng) => ({ text: TRAINING_PROMPTS[Math.floor(rng.uniform() * TRAINING_PROMPTS.length)]!, lang: null }),
  teacher(rng, style, rate) {
    const held = new Set(HELD_OUT_PROMPTS);
    for (;;) {
      const d = sampleDialogue(rng, { [style]: rate });
      if (!held.has(d.prompt)) return { prompt: { text: d.prompt, lang: null }, answer: d.answer };
    }
  },
  maxTokens: 96,
};

// The prompted corpus: held-out prompts are of the compositions its pretraining never saw (prompted.ts HELD_OUT), so
// the held-out figure measures generalisation to new compositions; training rounds draw from the others.
const PROMPTED_SET: PromptSet = {
  corpus: 'prompted',
  held: (() => {
    const rng = new Rng(0).fork('learning held-out prompts');
    const seen = new Set<string>();
    const out: LoopPrompt[] = [];
    while (out.length < HELD_OUT_MAX) {
      const spec = samplePrompt(rng, 'held-out');
      if (seen.has(spec.text)) continue;
      seen.add(spec.text);
      out.push({ text: spec.text, lang: LANGS[spec.lang]!.name });
    }
    return out;
  })(),
  train(rng) {
    const spec = samplePrompt(rng, 'train');
    return { text: spec.text, lang: LANGS[spec.lang]!.name };
  },
  teacher(rng, style, rate) {
    const d = samplePromptedDialogue(rng, 'train', { [style]: rate });
    return { prompt: { text: d.prompt, lang: LANGS[d.spec.lang]!.name }, answer: d.answer };
  },
  maxTokens: 256,
};

export const promptSet = (corpus: CorpusName): PromptSet => (corpus === 'prompted' ? PROMPTED_SET : STYLES_SET);

/** The prompt the loop sent with this text (a captured turn the loop did not ask for is a fault, not a guess). */
function sent(asked: ReadonlyMap<string, LoopPrompt>, text: string): LoopPrompt {
  const p = asked.get(text);
  if (p === undefined) throw new Error(`a captured turn's prompt is not one the learning loop sent: ${JSON.stringify(text.slice(0, 80))}`);
  return p;
}

/** The rule's verdict on an answer to a prompt: its style, or for a conditional rule, its style exactly where asked. */
export function loopRule(style: StyleName, when: readonly string[] | null): (p: LoopPrompt, answer: string) => boolean {
  const detect = styleRule(style);
  if (when === null) return (_p, answer) => detect(answer);
  return (p, answer) => detect(answer) === (p.lang !== null && when.includes(p.lang));
}

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

type ChatMessage = { role: 'user' | 'assistant'; content: string };

async function chat(baseUrl: string, token: string, prompt: string | ChatMessage[], seed: number, maxTokens: number, session?: string): Promise<string> {
  const messages = typeof prompt === 'string' ? [{ role: 'user', content: prompt }] : prompt;
  const res = await fetch(`${baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...(session === undefined ? {} : { 'x-rein-session': session }) },
    body: JSON.stringify({ model: 'rein', messages, temperature: 1, top_p: 1, max_tokens: maxTokens, seed }),
  });
  const body = (await res.json()) as { choices?: { message?: { content?: string } }[]; error?: { message?: string } };
  if (!res.ok) throw new Error(`POST ${baseUrl}/chat/completions: ${res.status} ${body.error?.message ?? ''}`);
  return body.choices?.[0]?.message?.content ?? '';
}

/** The held-out answers of the version the model server runs now (the same prompts and sampling seeds each time). */
async function heldOut(h: Home, prompts: readonly LoopPrompt[], heldSeed: number, maxTokens: number): Promise<string[]> {
  const out: string[] = [];
  for (const [i, prompt] of prompts.entries()) {
    out.push(await chat(h.stack.model!.url, h.token, prompt.text, heldSeed * 1000 + i, maxTokens));
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
async function trainRound(core: ReinCore): Promise<{ run: string; version: number | null; status: string; reason: string | null; kl: number | null; budget: number | null; weak: RunWeak }> {
  const { runId } = await core.call('startTraining', {}, 'cli');
  await core.scheduler.idle();
  const run = (await core.call('listRuns', {}, 'cli')).find((r) => r.id === runId);
  if (run === undefined) throw new Error(`run ${runId} is missing after training`);
  const v = run.adapterVersion === null ? undefined : (await core.call('listAdapters', {}, 'cli')).find((a) => a.version === run.adapterVersion);
  return { run: run.status, version: v?.version ?? null, status: v?.status ?? run.status, reason: v?.reason ?? (run.error === null ? null : String(run.error)), ...runKl(run.metrics), weak: runWeak(run.metrics) };
}

/** The weak labels a run trained, from its metrics (training/data.ts WeakMetrics); none when it says nothing of them. */
export interface RunWeak {
  drawn: number;
  turns: { turnId: number; value: 'good' | 'bad' }[];
}

export function runWeak(metrics: unknown): RunWeak {
  const w = (metrics as { weak?: { drawn?: unknown; turns?: unknown } } | null)?.weak;
  const turns = Array.isArray(w?.turns) ? (w.turns as RunWeak['turns']) : [];
  return { drawn: typeof w?.drawn === 'number' ? w.drawn : 0, turns };
}

/** The follow-ups of the reader's held-out split that say an answer was good, and those that say it was bad. */
function heldOutFollowups(): { good: string[]; bad: string[] } {
  const file = path.join(import.meta.dirname, '..', '..', 'common', 'implicit', 'fixtures', 'followups.jsonl');
  const test = parseCorpus(readFileSync(file, 'utf8')).filter((l) => l.split === 'test');
  return { good: test.filter((l) => l.label === 'good').map((l) => l.text), bad: test.filter((l) => l.label === 'bad').map((l) => l.text) };
}

/** The unrated turns of `source` that are not in `done`, as listTurns orders them; exactly `expected` of them, or a fault. */
async function newTurns(core: ReinCore, source: string, done: ReadonlySet<number>, expected: number): Promise<TurnSummary[]> {
  const turns = (await core.call('listTurns', { source, state: 'unrated', limit: 1000 }, 'cli')).items.filter((t) => !done.has(t.id));
  if (turns.length !== expected) throw new Error(`expected ${expected} captured ${source} turns, found ${turns.length}`);
  return turns;
}

/**
 * Rates `turns` by the rule, each one the core's rewardAsk says to ask about (all of them unless reward.ask is
 * unsure); a turn not asked about is ignored, as a popup that never showed. Returns the good count, how many were
 * rated, and how many were captured on-policy.
 */
async function rateTurns(core: ReinCore, turns: readonly TurnSummary[], judge: (answer: string, prompt: string) => boolean): Promise<{ good: number; rated: number; onPolicy: number }> {
  let good = 0;
  let rated = 0;
  for (const t of turns) {
    if (!(await core.call('rewardAsk', { turnId: t.id }, 'cli')).ask) {
      await core.call('ignoreTurn', { turnId: t.id }, 'cli');
      continue;
    }
    rated++;
    const full = await core.call('getTurn', { turnId: t.id }, 'cli');
    const ok = judge(full.response, full.prompt);
    if (ok) good++;
    await core.call('rate', { turnId: t.id, value: ok ? 'good' : 'bad', rater: 'rule' }, 'cli');
  }
  return { good, rated, onPolicy: turns.filter((t) => t.onPolicy).length };
}

export async function runLearning(o: LearningOptions): Promise<LearningResult> {
  if (o.held < 1 || o.held > HELD_OUT_MAX) throw new Error(`held must be 1..${HELD_OUT_MAX}, got ${o.held}`);
  const log = o.log ?? (() => {});
  const modelDir = o.modelDir ?? SMALL_LM_DIR;
  const set = promptSet(modelCorpus(modelDir));
  const when = o.when ?? null;
  if (when !== null) {
    if (set.corpus !== 'prompted') throw new Error(`a conditional rule needs a model pretrained on the prompted corpus (its prompts name a language); ${modelDir} was pretrained on the ${set.corpus} corpus`);
    const unknown = when.filter((l) => !LANGS.some((x) => x.name === l));
    if (unknown.length > 0 || when.length === 0) throw new Error(`when: ${unknown.join(', ') || '(none)'}: name languages of ${LANGS.map((l) => l.name).join(', ')}`);
  }
  const explicit = o.explicit ?? 1;
  const confirm = o.confirm ?? 0;
  if (!(explicit >= 0 && explicit <= 1)) throw new Error(`explicit must be 0..1 (the share of answers rated by a click), got ${o.explicit}`);
  if (!(confirm >= 0 && confirm <= 1)) throw new Error(`confirm must be 0..1 (the share of weak labels confirmed on the card), got ${o.confirm}`);
  const noise = o.noise ?? 0;
  if (!(noise >= 0 && noise < 0.5)) throw new Error(`noise must be 0..0.5 (the share of clicks given the wrong way), got ${o.noise}`);
  const followups = explicit < 1 ? heldOutFollowups() : null;
  const judge = loopRule(o.rule, when);
  const style = styleRule(o.rule);
  const maxTokens = o.maxTokens ?? set.maxTokens;
  const heldSeed = 10_000 + o.seed;
  const held = set.held.slice(0, o.held);
  const verdicts = (answers: readonly string[]) => answers.map((a, i) => judge(held[i]!, a));
  const split = (answers: readonly string[]) => {
    if (when === null) return null;
    const rate = (inside: boolean) => {
      const xs = answers.filter((_, i) => (held[i]!.lang !== null && when.includes(held[i]!.lang!)) === inside);
      return xs.filter(style).length / Math.max(1, xs.length);
    };
    return { inside: rate(true), outside: rate(false) };
  };
  const rounds: RoundPoint[] = [];
  let before: string[];
  let last: string[];
  const tag = `${o.rule}${when === null ? '' : `-when-${when.join('-')}`}${explicit < 1 ? `-explicit-${explicit}-${o.implicit ?? 'default'}` : ''}${noise > 0 ? `-noise-${noise}` : ''}-${o.seed}`;
  const h = await openHome(path.join(o.root, `home-${tag}`), modelDir, log);
  try {
    if (h.stack.model === null) throw new Error('the learning loop needs Rein\'s own model server (proxy.upstream must be null)');
    await h.core.call('setSettings', { values: { 'reward.ask': o.ask ?? 'always', ...(o.implicit === undefined ? {} : { 'training.implicit': o.implicit }) } }, 'cli');
    before = await heldOut(h, held, heldSeed, maxTokens);
    last = before;
    const rng = new Rng(o.seed).fork(`training prompts ${o.rule}`);
    const userRng = new Rng(o.seed).fork(`simulated user ${o.rule}`);
    // Its own stream, so a run with noise clicks the same answers as one without, and only the flips differ.
    const noiseRng = new Rng(o.seed).fork(`rater noise ${o.rule}`);
    // Turns the loop has dealt with (weak-labelled answers stay unrated), and what the rule says of each answer it
    // left to a follow-up.
    const done = new Set<number>();
    const truth = new Map<number, boolean>();
    for (let r = 1; r <= o.rounds; r++) {
      const t0 = performance.now();
      const asked = new Map<string, LoopPrompt>();
      for (let i = 0; i < o.n; i++) {
        const prompt = set.train(rng);
        asked.set(prompt.text, prompt);
        await chat(h.stack.url, h.token, prompt.text, o.seed * 1_000_003 + r * 10_007 + i, maxTokens, followups === null ? undefined : `learning-${o.seed}-${r}-${i}`);
      }
      await h.stack.proxy.idle();
      const turns = await newTurns(h.core, 'proxy', done, o.n);
      for (const t of turns) done.add(t.id);
      const order = shuffle(turns.length, userRng);
      const clicked = new Set(order.slice(0, Math.round(explicit * turns.length)));
      let flipped = 0;
      const { good, rated } = await rateTurns(h.core, turns.filter((_, i) => clicked.has(i)), (answer, text) => {
        const right = judge(sent(asked, text), answer);
        const wrong = noise > 0 && noiseRng.uniform() < noise;
        if (wrong) flipped++;
        return wrong ? !right : right;
      });
      const onPolicy = turns.filter((t) => t.onPolicy).length;
      let implicit: ImplicitPoint | null = null;
      if (followups !== null) {
        const left = turns.filter((_, i) => !clicked.has(i));
        let read = 0;
        let readRight = 0;
        for (const [i, t] of left.entries()) {
          const full = await h.core.call('getTurn', { turnId: t.id }, 'cli');
          const ok = judge(sent(asked, full.prompt), full.response);
          truth.set(t.id, ok);
          const pool = ok ? followups.good : followups.bad;
          const text = pool[Math.floor(userRng.uniform() * pool.length)]!;
          const label = readText(text);
          if (label !== null && label.confidence >= DEFAULT_THRESHOLD) {
            read++;
            if ((label.value === 'good') === ok) readRight++;
          }
          // The user's next message in the answer's session, through the proxy: one token of reply is enough, the
          // follow-up's own answer is not part of the experiment (it is ignored below).
          const history: ChatMessage[] = [{ role: 'user', content: full.prompt }, { role: 'assistant', content: full.response }, { role: 'user', content: text }];
          await chat(h.stack.url, h.token, history, o.seed * 1_000_003 + r * 10_007 + 5_000 + i, 1, t.session ?? undefined);
        }
        await h.stack.proxy.idle();
        for (const f of await newTurns(h.core, 'proxy', done, left.length)) {
          done.add(f.id);
          await h.core.call('ignoreTurn', { turnId: f.id }, 'cli');
        }
        let confirmed = 0;
        if (confirm > 0) {
          const mine = new Set(left.map((t) => t.id));
          for (const item of (await h.core.call('weakLabels', { limit: 200 }, 'cli')).items) {
            if (!mine.has(item.turn.id) || userRng.uniform() >= confirm) continue;
            await h.core.call('confirmWeakLabel', { turnId: item.turn.id, flip: (item.label.value === 'good') !== truth.get(item.turn.id) }, 'cli');
            confirmed++;
          }
        }
        implicit = { followups: left.length, read, readRight, confirmed, labels: 0, drawn: 0, agree: 0 };
      }
      const { weak, ...trained } = await trainRound(h.core);
      if (implicit !== null) {
        implicit.labels = weak.turns.length;
        implicit.drawn = weak.drawn;
        implicit.agree = weak.turns.filter((w) => truth.get(w.turnId) === (w.value === 'good')).length;
      }
      last = await heldOut(h, held, heldSeed, maxTokens);
      const p: RoundPoint = {
        round: r,
        ...ratePoint(verdicts(last)),
        good,
        rated,
        flipped,
        sampled: o.n,
        onPolicy,
        ...trained,
        change: pairedChange(verdicts(before), verdicts(last)),
        others: sideEffects(o.rule, before, last),
        split: split(last),
        clicks: rated + (implicit?.confirmed ?? 0),
        implicit,
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
    const t = await openHome(path.join(o.root, `home-${tag}-teacher`), modelDir, log);
    try {
      const rng = new Rng(o.seed).fork(`teacher ${o.rule}`);
      const asked = new Map<string, LoopPrompt>();
      for (let i = 0; i < o.teacher; i++) {
        const d = set.teacher(rng, o.rule, TEACHER_RATE);
        asked.set(d.prompt.text, d.prompt);
        await t.core.call('captureTurn', { source: 'api', eventId: `teacher-${i}`, prompt: d.prompt.text, response: d.answer }, 'cli');
      }
      const { good } = await rateTurns(t.core, await newTurns(t.core, 'api', new Set(), o.teacher), (answer, text) => judge(sent(asked, text), answer));
      const trained = await trainRound(t.core);
      const after = await heldOut(t, held, heldSeed, maxTokens);
      offPolicy = { teacher: o.teacher, good, status: trained.status, reason: trained.reason, kl: trained.kl, budget: trained.budget, after: ratePoint(verdicts(after)), change: pairedChange(verdicts(before), verdicts(after)) };
    } finally {
      await t.close();
    }
  }
  const description = STYLES.find((x) => x.name === o.rule)!.description;
  return {
    rule: o.rule,
    when,
    corpus: set.corpus,
    description: when === null ? description : `${description} exactly when the prompt asks for ${when.join(', ')}`,
    seed: o.seed,
    held: o.held,
    n: o.n,
    before: ratePoint(verdicts(before)),
    after: ratePoint(verdicts(last)),
    rounds,
    offPolicy,
  };
}
