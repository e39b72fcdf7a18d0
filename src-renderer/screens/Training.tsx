// The training dashboard: pending ratings against the threshold with Train now, the live progress of a round with
// cancel, the baseline and per-day charts, and each run with its curve and the eval gate's verdict in words.
import { useEffect } from 'react';
import { useShallow } from 'zustand/shallow';
import { EmaChart, PerDayChart } from '../components/charts.tsx';
import { TrainNowButton } from '../components/TrainConfirm.tsx';
import { useRein } from '../store/react.tsx';
import { selectPerDay } from '../store/ratings.ts';
import { BASELINE_HELP, BASELINE_LABEL, selectPendingProgress, selectRejectedText } from '../store/status.ts';
import { fromFirstRatedDay } from '../store/chart-words.ts';
import { selectLiveProgress, selectScheduleWords, selectTrainingView } from '../store/training.ts';
import { LiveRun } from './LiveRun.tsx';
import { RunList } from './RunList.tsx';
import { RewardPanel } from '../components/RewardPanel.tsx';

export function Training() {
  const { pending, rejected, view, error, ema, days, load, live, schedule } = useRein(
    useShallow((s) => ({
      pending: selectPendingProgress(s),
      rejected: selectRejectedText(s),
      view: selectTrainingView(s),
      live: selectLiveProgress(s),
      error: s.trainingError,
      ema: s.ema,
      days: selectPerDay(s),
      schedule: selectScheduleWords(s),
      load: s.loadRecentRatings,
    })),
  );
  const loadEma = useRein((s) => s.loadEma);
  const total = useRein((s) => s.status?.ratings.total ?? 0);
  useEffect(() => {
    void load();
    void loadEma();
  }, [load, loadEma, total]);
  return (
    <div className="screen training-screen">
      <section className="panel" aria-labelledby="next-round">
        <div className="panel-row">
          <h2 id="next-round">Next round</h2>
          <TrainNowButton className="primary" />
        </div>
        <p className="big-number" data-testid="dash-pending">
          {!pending ? (
            '…'
          ) : pending.pending < pending.threshold ? (
            <>
              {pending.pending} of {pending.threshold} <span className="muted">ratings waiting</span>
            </>
          ) : (
            <>
              {pending.pending} <span className="muted">ratings waiting, enough for a round (it needs {pending.threshold})</span>
            </>
          )}
        </p>
        {pending && <progress className="meter wide" max={pending.threshold} value={Math.min(pending.pending, pending.threshold)} aria-label="Pending ratings toward the training threshold" />}
        {rejected && (
          <p className="rejected-round" data-testid="rejected-round">
            {rejected}
          </p>
        )}
        <p className="muted" aria-live="polite" data-testid="training-state">
          {view.kind === 'unavailable' && <span className="unavailable">{view.message}</span>}
          {view.kind === 'running' && `Training (${view.phase}), ${Math.round(view.fraction * 100)}%`}
          {view.kind === 'idle' && schedule}
          {error && <span className="error"> {error.message}</span>}
        </p>
      </section>
      {live && <LiveRun progress={live} />}
      <RewardPanel />
      <div className="chart-grid">
        <section className="panel" aria-labelledby="ema-title">
          <h2 id="ema-title">{BASELINE_LABEL} over time</h2>
          <p className="muted small">{BASELINE_HELP}</p>
          {ema.length > 1 ? <EmaChart points={ema} /> : <p className="empty-chart">Rate a few answers to see the line.</p>}
        </section>
        <section className="panel" aria-labelledby="days-title">
          <h2 id="days-title">Ratings per day</h2>
          <p className="muted small">Good and Bad ratings each day, from your first rating in the last 14 days.</p>
          {days.some((d) => d.good + d.bad > 0) ? <PerDayChart days={fromFirstRatedDay(days)} /> : <p className="empty-chart">No ratings in the last 14 days.</p>}
        </section>
      </div>
      <RunList />
    </div>
  );
}
