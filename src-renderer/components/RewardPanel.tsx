// The reward model on the Training screen: its latest version's held-out AUROC and pair accuracy (or why there are
// too few ratings to judge), what AUROC means in one sentence, where held-out Good and Bad answers scored, and how
// the popup asks (reward.ask). It reloads when the rating count or the runs change.
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
      {words.scores !== null && (
        <>
          <p className="muted small">
            AUROC is the chance that the reward model scores a Good answer above a Bad one, on ratings it never trained on: 0.5 is a coin
            flip, 1 is always right.
          </p>
          <ScoreStrip good={words.scores.good} bad={words.scores.bad} />
        </>
      )}
      <p className="muted small" data-testid="reward-ask">
        {words.ask}
      </p>
    </section>
  );
}

/** Where each held-out answer scored, one row per label: the further apart the rows, the better the model tells them apart. */
function ScoreStrip(props: { good: number[]; bad: number[] }) {
  const rows = [
    { name: 'Good', cls: 'good', scores: props.good },
    { name: 'Bad', cls: 'bad', scores: props.bad },
  ];
  const mean = (xs: number[]) => (xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length);
  const label = rows.map((r) => `${r.scores.length} ${r.name}, average ${Math.round((mean(r.scores) ?? 0) * 100)}%`).join('; ');
  return (
    <figure className="score-strip" role="img" aria-label={`The reward model's chance of Good for held-out answers: ${label}`}>
      {rows.map((r) => (
        <div key={r.name} className="score-row">
          <span className={`score-name ${r.cls}`}>{r.name}</span>
          <span className="score-track">
            {r.scores.map((p, i) => (
              <span key={i} className={`score-dot ${r.cls}`} style={{ left: `${(p * 100).toFixed(1)}%` }} />
            ))}
          </span>
        </div>
      ))}
      <div className="score-row score-axis muted small" aria-hidden="true">
        <span className="score-name" />
        <span className="score-track">
          <span style={{ left: '0%' }}>0%</span>
          <span style={{ left: '50%' }}>50%</span>
          <span style={{ left: '100%' }}>100%</span>
        </span>
      </div>
      <figcaption className="muted small">Each dot is a held-out answer, placed at the reward model&apos;s chance that it is Good.</figcaption>
    </figure>
  );
}
