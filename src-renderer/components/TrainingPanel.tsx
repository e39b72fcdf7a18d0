import { useShallow } from 'zustand/shallow';
import { useRein } from '../store/react.tsx';
import { selectTrainingView } from '../store/training.ts';
import { TrainNowButton } from './TrainConfirm.tsx';

export function TrainingPanel() {
  const { view, error, runs } = useRein(
    useShallow((s) => ({
      view: selectTrainingView(s),
      error: s.trainingError,
      runs: s.runs.length,
    })),
  );
  return (
    <section className="training" aria-labelledby="training-title">
      <div className="training-row">
        <h2 id="training-title">Training</h2>
        <TrainNowButton className="secondary" />
      </div>
      <p className="muted" aria-live="polite" data-testid="training-state">
        {view.kind === 'unavailable' && <span className="unavailable">{view.message}</span>}
        {view.kind === 'running' && `Training (${view.phase}), ${Math.round(view.fraction * 100)}%`}
        {view.kind === 'idle' && (runs === 0 ? 'No training rounds yet.' : `${runs} recent round${runs === 1 ? '' : 's'}.`)}
        {error && <span className="error"> {error.message}</span>}
      </p>
    </section>
  );
}
