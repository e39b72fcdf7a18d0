import { useShallow } from 'zustand/shallow';
import { useRein } from '../store/react.tsx';
import { selectCurrentTurn } from '../store/turns.ts';
import { Exchange } from './Exchange.tsx';
import { timeAgo } from './format.ts';
import { useNow } from './useNow.ts';
import { CheckIcon, CrossIcon } from './icons.tsx';

export function RatingCard() {
  const now = useNow();
  const { turn, loaded, busy, error, rate, undo, turnsError, undoneTurnId } = useRein(
    useShallow((s) => ({
      turn: selectCurrentTurn(s),
      loaded: s.turnsLoaded,
      busy: s.ratingTurnId !== null,
      error: s.rateError,
      rate: s.rate,
      undo: s.undo,
      turnsError: s.turnsError,
      undoneTurnId: s.undoneTurnId,
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
  const rated = turn.rating?.kind;
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
      <div className="actions" role="group" aria-label="Rate this answer">
        <button type="button" className="rate good" aria-pressed={rated === 'good'} disabled={busy} onClick={() => void rate(turn.id, 'good')}>
          <CheckIcon /> Good <kbd>1</kbd>
        </button>
        <button type="button" className="rate bad" aria-pressed={rated === 'bad'} disabled={busy} onClick={() => void rate(turn.id, 'bad')}>
          <CrossIcon /> Bad <kbd>2</kbd>
        </button>
        {rated && (
          <button type="button" className="undo" onClick={() => void undo()}>
            Undo <kbd>U</kbd>
          </button>
        )}
      </div>
      <p className="card-state" aria-live="polite" data-testid="card-state">
        {error ? <span className="error">{error.message}</span> : rated ? `Rated ${rated === 'good' ? 'Good' : rated === 'bad' ? 'Bad' : `${turn.rating?.scale}/5`}.` : 'Not rated yet.'}
      </p>
      {undoneTurnId === turn.id && !error && (
        <p className="undo-note" role="status" data-testid="undo-note">
          Undone · turn {turn.id}
        </p>
      )}
    </section>
  );
}
