import { useShallow } from 'zustand/shallow';
import { useRein } from '../store/react.tsx';
import { selectTrainingView } from '../store/training.ts';

export function TrainingPanel() {
  const { view, starting, error, start, runs } = useRein(
    useShallow((s) => ({
      view: selectTrainingView(s),
      starting: s.trainingStarting,
      error: s.trainingError,
      start: s.startTraining,
      runs: s.runs.length,
    })),
  );
  return (
    <section className="training" aria-labelledby="training-title">
      <div className="training-row">
        <h2 id="training-title">Training</h2>
        <button type="button" className="secondary" onClick={() => void start()} disabled={starting || view.kind === 'running'}>
          {starting ? 'Starting…' : 'Train now'}
        </button>
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
