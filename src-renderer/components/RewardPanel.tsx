// The reward model on the Training screen: its latest version's held-out AUROC and pair accuracy with their 95%
// intervals, and how the popup asks (reward.ask). It reloads when the rating count or the runs change.
import { useEffect } from 'react';
import { useRein } from '../store/react.tsx';
import { selectRewardWords } from '../store/training.ts';

export function RewardPanel() {
  const words = useRein(selectRewardWords);
  const load = useRein((s) => s.loadReward);
  const runs = useRein((s) => s.runs.length);
  const done = useRein((s) => s.progress?.phase === 'done');
  useEffect(() => {
    void load();
  }, [load, runs, done]);
  if (words === null) return null;
  return (
    <section className="panel" aria-labelledby="reward-title">
      <h2 id="reward-title">Reward model</h2>
      <p data-testid="reward-line">{words.model}</p>
      <p className="muted small" data-testid="reward-ask">
        {words.ask}
      </p>
    </section>
  );
}
