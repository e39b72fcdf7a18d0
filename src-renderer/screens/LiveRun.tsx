import { useEffect, useState } from 'react';
import { useShallow } from 'zustand/shallow';
import type { TrainingProgress } from '../../src-main/common/domain.ts';
import { RunCurve } from '../components/charts.tsx';
import { TrainConfirm } from '../components/TrainConfirm.tsx';
import { nextRoundConfig } from '../store/estimate.ts';
import { useRein } from '../store/react.tsx';

const fmt = (x: number | null, digits = 3) => (x === null ? '—' : Math.abs(x) >= 0.001 || x === 0 ? x.toFixed(digits) : x.toExponential(1));

function eta(s: number | null): string {
  if (s === null) return '—';
  if (s < 60) return `${Math.ceil(s)} s`;
  return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

export function LiveRun(props: { progress: TrainingProgress }) {
  const p = props.progress;
  const { curve, cancel, presets, loadPresets, budget } = useRein(
    useShallow((s) => ({
      curve: s.liveCurve,
      cancel: s.cancelTraining,
      presets: s.presets,
      loadPresets: s.loadRoundPresets,
      // The running round's budget: the preset it was started with (its stored config is written when it ends).
      budget: nextRoundConfig(s.presets, s.settings?.['training.preset'], s.settings?.['training.custom'])?.klBudget ?? null,
    })),
  );
  const [asking, setAsking] = useState(false);
  useEffect(() => {
    if (!presets) void loadPresets();
  }, [presets, loadPresets]);
  return (
    <section className="panel live" aria-labelledby="live-title" data-testid="live-run">
      <div className="panel-row">
        <h2 id="live-title">
          Round {p.runId}: {p.phase}
        </h2>
        <button type="button" className="secondary" onClick={() => setAsking(true)}>
          Cancel…
        </button>
        {asking && (
          <TrainConfirm
            action={{ kind: 'cancel' }}
            onCancel={() => setAsking(false)}
            onConfirm={() => {
              setAsking(false);
              void cancel();
            }}
          />
        )}
      </div>
      <progress className="meter wide" max={Math.max(1, p.steps)} value={p.step} aria-label="Training progress" />
      <dl className="live-stats">
        <div><dt>Step</dt><dd data-testid="live-step">{p.step} / {p.steps}</dd></div>
        <div><dt>Loss</dt><dd>{fmt(p.loss)}</dd></div>
        <div><dt>Training-batch KL</dt><dd>{fmt(p.kl, 4)}</dd></div>
        <div><dt>Clipped</dt><dd>{p.clipFraction === null ? '—' : `${(p.clipFraction * 100).toFixed(0)}%`}</dd></div>
        <div><dt>Tokens/s</dt><dd>{p.tokensPerSecond === null ? '—' : Math.round(p.tokensPerSecond)}</dd></div>
        <div><dt>Time left</dt><dd>{eta(p.etaSeconds)}</dd></div>
      </dl>
      {p.message && <p className="muted small">{p.message}</p>}
      {curve.length > 1 && <RunCurve steps={curve} refs={{ budget }} />}
    </section>
  );
}
