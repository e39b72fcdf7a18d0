// `rein demo`: the whole loop offline on the small pretrained LM (resources/small-lm), through the product
// (node/demo/learning.ts): each round samples answers through the serve-model stack (the capture proxy
// and Rein's own model server with the active adapter), rates them with a visible style rule, trains one round with
// the balanced preset through the scheduler and the worker, and measures the held-out preferred-style rate with its
// 95% interval. --teacher N adds the off-policy run (N rated answers of a second sampler, trained with KTO).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BadInputError } from '../../common/errors.ts';
import { registerCommand } from '../dispatch.ts';
import { intOption, stringOption } from './format.ts';

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;
const ci = (c: readonly [number, number]): string => `${pct(c[0])}-${pct(c[1])}`;
const signedPct = (x: number): string => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)}`;

registerCommand({
  name: 'demo',
  summary: 'Train the small demo LM offline on a visible style rule and print its learning curve (a few minutes).',
  usage: 'rein demo [--rule question] [--when LANG,…] [--model DIR] [--rounds N] [--ratings N] [--held N] [--teacher N] [--seed S] [--keep]',
  options: {
    rule: { type: 'string', help: 'the preferred style <name>: code, apology, hedge, question, tests, steps (default question)' },
    when: { type: 'string', help: 'a conditional rule: the style exactly when the prompt asks for one of these languages <Python,Go,…> (needs a model pretrained on the prompted corpus, e.g. --model resources/small-lm-prompted)' },
    model: { type: 'string', help: 'the HF model folder to train <dir> (default the committed small LM)' },
    rounds: { type: 'string', help: 'training rounds <n> (default 2)' },
    ratings: { type: 'string', help: 'answers sampled and rated per round <n> (default 32)' },
    held: { type: 'string', help: 'held-out prompts the rate is measured on <n> (default 128, at most 128)' },
    teacher: { type: 'string', help: 'off-policy: rated answers of a second sampler trained with KTO <n> (default 0: skip)' },
    seed: { type: 'string', help: 'random seed <n> (default 1)' },
    keep: { type: 'boolean', help: 'keep the demo folder (homes, database, adapters) and print its path' },
  },
  async run(ctx) {
    const { STYLES } = await import('../../node/demo/corpus.ts');
    const { runLearning, HELD_OUT_MAX } = await import('../../node/demo/learning.ts');
    const rule = stringOption(ctx.options, 'rule') ?? 'question';
    const style = STYLES.find((s) => s.name === rule);
    if (style === undefined) throw new BadInputError(`--rule must be one of ${STYLES.map((s) => s.name).join(', ')}, not ${JSON.stringify(rule)}`, 'rule');
    const rounds = intOption(ctx.options, 'rounds', 0, 20) ?? 2;
    const n = intOption(ctx.options, 'ratings', 4, 1000) ?? 32;
    const held = intOption(ctx.options, 'held', 8, HELD_OUT_MAX) ?? HELD_OUT_MAX;
    const teacher = intOption(ctx.options, 'teacher', 0, 1000) ?? 0;
    const seed = intOption(ctx.options, 'seed', 0, 1_000_000) ?? 1;
    const whenOption = stringOption(ctx.options, 'when');
    const when = whenOption === undefined ? null : whenOption.split(',').map((l) => l.trim()).filter((l) => l !== '');
    const modelOption = stringOption(ctx.options, 'model');
    const modelDir = modelOption === undefined ? undefined : path.resolve(modelOption);
    if (modelDir !== undefined && !existsSync(path.join(modelDir, 'config.json'))) throw new BadInputError(`--model: ${modelDir} is not a Hugging Face model folder (no config.json)`, 'model');
    const root = mkdtempSync(path.join(os.tmpdir(), 'rein-demo-'));
    const say = (s: string): void => ctx.io.stderr(`${s}\n`);
    try {
      say(`rule: an answer is good when it ${style.description}${when === null ? '' : ` exactly when the prompt asks for ${when.join(', ')} (conditional accuracy)`} (corpus base rate ${pct(style.rate)})`);
      say(`${rounds} rounds of ${n} answers sampled through the proxy and Rein's model server, rated, trained (balanced preset); rate on ${held} held-out prompts`);
      const r = await runLearning({
        root,
        rule: style.name,
        seed,
        rounds,
        n,
        held,
        teacher,
        when,
        ...(modelDir === undefined ? {} : { modelDir }),
        log: () => {},
        onRound: (p) => say(`  round ${p.round}: ${p.good}/${p.rated} good, v${p.version ?? '-'} ${p.status}, held-out ${pct(p.rate)} (${ci(p.ci)}) in ${p.seconds.toFixed(0)} s`),
      });
      const lines = [
        `${style.description}, on ${held} held-out prompts (95% CI)`,
        `  before:   ${pct(r.before.rate)} (${ci(r.before.ci)}, ${r.before.k}/${r.before.n})`,
        ...r.rounds.map(
          (p) =>
            `  round ${p.round}: ${pct(p.rate)} (${ci(p.ci)}, ${p.k}/${p.n}), change ${signedPct(p.change.mean)} (${signedPct(p.change.ci[0])} to ${signedPct(p.change.ci[1])}) points; v${p.version ?? '-'} ${p.status}` +
            `${p.kl === null ? '' : `, KL ${p.kl.toFixed(4)}${p.budget === null ? '' : ` of ${p.budget}`}`}${p.reason === null ? '' : ` (${p.reason})`}` +
            `${p.split === null ? '' : `\n           ${style.name}: ${pct(p.split.inside)} where asked, ${pct(p.split.outside)} elsewhere`}` +
            `\n           other styles (side effects): ${p.others.map((e) => `${e.name} ${pct(e.rate)} (${signedPct(e.change.mean)})`).join(', ')}`,
        ),
        ...(r.offPolicy === null
          ? []
          : [
              `  off-policy, ${r.offPolicy.teacher} teacher answers (${r.offPolicy.good} good), KTO: ${pct(r.offPolicy.after.rate)} (${ci(r.offPolicy.after.ci)}), change ${signedPct(r.offPolicy.change.mean)} ` +
                `(${signedPct(r.offPolicy.change.ci[0])} to ${signedPct(r.offPolicy.change.ci[1])}) points; ${r.offPolicy.status}`,
            ]),
        ...(ctx.options.keep === true ? [`kept in ${root}`] : []),
      ];
      ctx.print(lines.join('\n'), {
        rule: r.rule,
        when: r.when,
        corpus: r.corpus,
        seed: r.seed,
        held: r.held,
        before: { rate: r.before.rate, ci: r.before.ci },
        after: { rate: r.after.rate, ci: r.after.ci },
        rounds: r.rounds.map((p) => ({ round: p.round, rate: p.rate, ci: p.ci, change: p.change, good: p.good, rated: p.rated, onPolicy: p.onPolicy, run: p.run, version: p.version, status: p.status, reason: p.reason, kl: p.kl, budget: p.budget, others: p.others, split: p.split })),
        offPolicy: r.offPolicy,
        dir: ctx.options.keep === true ? root : null,
      });
    } finally {
      if (ctx.options.keep !== true) rmSync(root, { recursive: true, force: true });
    }
  },
});
