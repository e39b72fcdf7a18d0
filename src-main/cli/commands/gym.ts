// `rein gym <env>`: LlamaGym's loop on the small demo LM, offline, in a fresh Rein home (node/gym/experiment.ts).
// The untrained agent plays the held-out seeds, N training episodes train rounds through the scheduler and the gate
// as batches fill (a progress bar with the ETA on stderr), and the trained agent plays the same held-out seeds. It
// prints the win rate and the mean return before and after with their 95% intervals, and for blackjack the same for
// basic strategy and a random policy on those seeds.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BadInputError } from '../../common/errors.ts';
import type { Evaluation } from '../../common/gym/evaluate.ts';
import { registerCommand } from '../dispatch.ts';
import { intOption } from './format.ts';

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;
const signedPts = (x: number): string => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)}`;
const dur = (s: number): string => (s >= 3600 ? `${Math.floor(s / 3600)}h ${Math.round((s % 3600) / 60)}m` : s >= 60 ? `${Math.floor(s / 60)}m ${Math.round(s % 60)}s` : `${Math.round(s)}s`);

/** `[#####-----] 50/100` */
export function progressBar(done: number, total: number, width = 20): string {
  const k = total <= 0 ? width : Math.round((width * Math.min(done, total)) / total);
  return `[${'#'.repeat(k)}${'-'.repeat(width - k)}] ${done}/${total}`;
}

/** Seconds left at the average pace so far, or null before the first item. */
export function eta(elapsedSeconds: number, done: number, total: number): number | null {
  return done <= 0 ? null : (elapsedSeconds / done) * (total - done);
}

const row = (name: string, e: Evaluation): string =>
  `  ${name.padEnd(11)} ${pct(e.wins.rate).padStart(6)} [${pct(e.wins.ci[0])}, ${pct(e.wins.ci[1])}]   ${e.meanReturn.mean.toFixed(3).padStart(6)} [${e.meanReturn.ci[0].toFixed(3)}, ${e.meanReturn.ci[1].toFixed(3)}]`;
const json = (e: Evaluation) => ({ winRate: e.wins.rate, winCi: e.wins.ci, wins: e.wins.k, episodes: e.episodes, meanReturn: e.meanReturn.mean, meanReturnCi: e.meanReturn.ci });

registerCommand({
  name: 'gym',
  summary: 'Train the small demo LM as an agent in a Gym-style environment (blackjack, frozen-lake) and compare before/after.',
  usage: 'rein gym <blackjack|frozen-lake> [--episodes N] [--batch N] [--held N] [--seed S] [--gate-episodes N] [--group N] [--natural] [--sab] [--penalty X] [--keep]',
  args: [1, 1],
  options: {
    episodes: { type: 'string', help: 'training episodes <n> (default 320)' },
    batch: { type: 'string', help: 'episodes per training round <n> (default 16)' },
    held: { type: 'string', help: 'held-out episodes evaluated before and after <n> (default 2000)' },
    seed: { type: 'string', help: 'random seed <n> (default 1)' },
    'gate-episodes': { type: 'string', help: "held-out episodes each round's env gate plays on the candidate and on its parent <n> (default 400; 0: the rating gate)" },
    group: { type: 'string', help: 'play each training seed <n> times in a row and credit each step against the mean return of the others (default 1: the round\'s reward baseline only)' },
    natural: { type: 'boolean', help: 'blackjack: a winning natural pays 1.5' },
    sab: { type: 'boolean', help: "blackjack: Sutton & Barto's rules (a natural wins unless the dealer has one)" },
    penalty: { type: 'string', help: 'reward added to a step whose reply names no action <x> (default -1)' },
    keep: { type: 'boolean', help: 'keep the gym folder (home, database, adapters) and print its path' },
  },
  async run(ctx) {
    const { GYM_ENVS, runGym } = await import('../../node/gym/experiment.ts');
    const env = ctx.args[0] as (typeof GYM_ENVS)[number];
    if (!GYM_ENVS.includes(env)) throw new BadInputError(`the env must be one of ${GYM_ENVS.join(', ')}, not ${JSON.stringify(ctx.args[0])}`, 'env');
    const episodes = intOption(ctx.options, 'episodes', 1, 1_000_000) ?? 320;
    const batch = intOption(ctx.options, 'batch', 1, 10_000) ?? 16;
    const held = intOption(ctx.options, 'held', 10, 1_000_000) ?? 2000;
    const seed = intOption(ctx.options, 'seed', 0, 1_000_000) ?? 1;
    const gateEpisodes = intOption(ctx.options, 'gate-episodes', 0, 1_000_000) 
    const group = intOption(ctx.options, 'group', 1, 1_000) ?? 1;
    const penaltyText = ctx.options.penalty;
    const penalty = typeof penaltyText === 'string' ? Number(penaltyText) : undefined;
    if (penalty !== undefined && !Number.isFinite(penalty)) throw new BadInputError(`--penalty must be a number, got ${JSON.stringify(penaltyText)}`, 'penalty');
    if (env !== 'blackjack' && (ctx.options.natural === true || ctx.options.sab === true)) throw new BadInputError('--natural and --sab are blackjack rules', 'env');
    const root = mkdtempSync(path.join(os.tmpdir(), 'rein-gym-'));
    const say = (s: string): void => ctx.io.stderr(`${s}\n`);
    const t0 = performance.now();
    let lastShown = -1;
    let lastRound = '';
    try {
      say(`${env}: the small LM plays ${held} held-out episodes, trains on ${episodes} episodes (a round per ${batch}), and plays them again`);
      const r = await runGym({
        env,
        home: path.join(root, 'home'),
        episodes,
        batchEpisodes: batch,
        group,
        heldOut: held,
        seed,
        ...(gateEpisodes === undefined ? {} : { gateEpisodes }),
        blackjack: { natural: ctx.options.natural === true, sab: ctx.options.sab === true },
        ...(penalty === undefined ? {} : { invalidPenalty: penalty }),
        onEvaluate: (what, done, total) => {
          if (done === total) say(`  evaluated ${what} training: ${total} episodes`);
        },
        onRound: (x) => {
          lastRound = `, round ${x.runId}: v${x.version ?? '-'} ${x.status}`;
        },
        onEpisode: (_e, i) => {
          const done = i + 1;
          const tenth = Math.floor((10 * done) / episodes);
          if (tenth === lastShown && done !== episodes) return;
          lastShown = tenth;
          const left = eta((performance.now() - t0) / 1000, done, episodes);
          say(`  training ${progressBar(done, episodes)} episodes${lastRound}${left === null ? '' : `, ETA ${dur(left)}`}`);
        },
      });
      const accepted = r.rounds.filter((x) => x.status === 'active').length;
      const lines = [
        `${env}, ${r.heldOut} held-out episodes: win rate [95% Wilson CI]   mean return [95% CI]`,
        row('untrained', r.before),
        row('trained', r.after),
        ...Object.entries(r.baselines).map(([k, e]) => row(k === 'basic' ? 'basic strat' : k, e)),
        `  change on the same seeds: win rate ${signedPts(r.change.winRate.mean)} [${signedPts(r.change.winRate.ci[0])}, ${signedPts(r.change.winRate.ci[1])}] points, ` +
          `mean return ${r.change.meanReturn.mean.toFixed(3)} [${r.change.meanReturn.ci[0].toFixed(3)}, ${r.change.meanReturn.ci[1].toFixed(3)}]`,
        `${r.episodes} training episodes, ${r.rounds.length} rounds (${accepted} accepted); unreadable replies ${r.stats.invalid} of ${r.stats.steps} steps; ` +
          `env errors ${r.stats.envErrors}; trimmed chats ${r.stats.trimmed}; ${dur(r.seconds)} in all`,
        ...(ctx.options.keep === true ? [`kept in ${root}`] : []),
      ];
      ctx.print(lines.join('\n'), {
        env: r.env,
        seed: r.seed,
        episodes: r.episodes,
        heldOut: r.heldOut,
        before: { ...json(r.before), unreadable: r.before.invalid, steps: r.before.steps },
        after: { ...json(r.after), unreadable: r.after.invalid, steps: r.after.steps },
        change: { winRate: r.change.winRate.mean, winRateCi: r.change.winRate.ci, meanReturn: r.change.meanReturn.mean, meanReturnCi: r.change.meanReturn.ci },
        baselines: Object.fromEntries(Object.entries(r.baselines).map(([k, e]) => [k, json(e)])),
        rounds: r.rounds,
        stats: r.stats,
        trainSeconds: r.trainSeconds,
        seconds: r.seconds,
        ...(ctx.options.keep === true ? { kept: root } : {}),
      });
    } finally {
      if (ctx.options.keep !== true) rmSync(root, { recursive: true, force: true });
    }
  },
});
