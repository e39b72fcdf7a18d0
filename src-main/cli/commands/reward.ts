// `rein reward status` and `rein reward train`: the reward model (issue #14 item 3) through the core's verbs.
import type { RewardStatus } from '../../common/domain.ts';
import { rewardModelLine } from '../../common/training/reward.ts';
import { registerCommand } from '../dispatch.ts';

export function formatRewardStatus(s: RewardStatus): string {
  const ask = s.ask === 'always' ? 'asks about every answer (reward.ask=always)' : `asks only when the reward model is unsure: |p - 0.5| < ${s.unsureMargin} (reward.ask=unsure); ${s.notAsked} ${s.notAsked === 1 ? 'answer' : 'answers'} not asked (left unrated)`;
  if (s.latest === null) return `no reward model yet: it trains after the next round (or rein reward train) once ratings hold a preferred and a not-preferred answer\nactive learning: ${ask}`;
  const from = `features from ${s.latest.baseModel}${s.latest.adapterVersion === null ? ' (the base, adapter off)' : ` with adapter v${s.latest.adapterVersion}`}`;
  return [s.line ?? rewardModelLine(s.latest), `  ${from}; trained ${new Date(s.latest.createdAt).toISOString()}${s.latest.runId === null ? '' : ` after run ${s.latest.runId}`}`, `active learning: ${ask}`, ...s.history.map((m) => `  ${rewardModelLine(m)}`)].join('\n');
}

registerCommand({
  name: 'reward status',
  summary: 'The reward model: held-out AUROC and pair accuracy with their 95% intervals, and the active-learning setting.',
  usage: 'rein reward status',
  options: {},
  async run(ctx) {
    const s = await (await ctx.api()).call('rewardStatus', {});
    ctx.print(formatRewardStatus(s), s);
  },
});

registerCommand({
  name: 'reward train',
  summary: 'Train a reward-model version on every live rating now (it also retrains after each round).',
  usage: 'rein reward train',
  options: {},
  async run(ctx) {
    const r = await (await ctx.api()).call('trainRewardModel', {});
    ctx.print(r.model === null ? `not trained: ${r.reason}` : rewardModelLine(r.model), r);
  },
});
