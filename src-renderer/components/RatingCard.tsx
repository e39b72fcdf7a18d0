import { useShallow } from 'zustand/shallow';
import { useRein } from '../store/react.tsx';
import { selectCurrentAnswer, selectCurrentTurn } from '../store/turns.ts';
import { Exchange } from './Exchange.tsx';
import { timeAgo } from './format.ts';
import { useNow } from './useNow.ts';
import { RatingControls } from './RatingControls.tsx';
import { WeakLabel } from './WeakLabel.tsx';

export function RatingCard() {
  const now = useNow();
  const { turn, loaded, turnsError, answer } = useRein(
    useShallow((s) => ({
      turn: selectCurrentTurn(s),
      answer: selectCurrentAnswer(s),
      loaded: s.turnsLoaded,
      turnsError: s.turnsError,
    })),
  );
  if (turnsError) {
    return (
      <section className="card empty" role="alert">
        <p>Cannot load turns: {turnsError.message}</p>
      </section>
    );
  }
  if (!turn) {
    return (
      <section className="card empty" aria-live="polite">
        <h2>{loaded ? 'No answers to rate yet' : 'Loading…'}</h2>
        {loaded && <p>When your coding agent answers, the answer shows up here. Rate it Good or Bad, and Rein learns from it.</p>}
      </section>
    );
  }
  return (
    <section className="card" aria-labelledby="card-title" data-testid="rating-card" data-turn-id={turn.id}>
      <div className="card-meta">
        <h2 id="card-title" className="agent">
          {turn.source}
        </h2>
        {turn.session && (
          <span className="session" title={turn.session}>
            {turn.session}
          </span>
        )}
        {turn.model && <span className="model-tag">{turn.model}</span>}
        <time dateTime={new Date(turn.createdAt).toISOString()}>{timeAgo(turn.createdAt, now)}</time>
      </div>
      <Exchange turn={turn} />
      <WeakLabel turnId={turn.id} rated={turn.rating !== null} />
      <RatingControls turnId={turn.id} rating={turn.rating} where="card" answer={answer} />
    </section>
  );
}
