// One set of rating controls, the same on the main window's card, the popup and a Chat answer: Good and Bad, an
// expandable "Score, correction, tags" section whose contents go with whichever rating is given (button or key),
// Undo, and one line that says the rating, the error beside it, or what an undo did. The bar sticks to the bottom of
// the window while a long answer above it is read.
import { useEffect, useState } from 'react';
import { useShallow } from 'zustand/shallow';
import type { RatingView } from '../../src-main/common/domain.ts';
import { useRein } from '../store/react.tsx';
import { selectRateError, selectUndoNote } from '../store/rating.ts';
import { countsAs, ratingLabel } from '../store/ratings.ts';
import type { RatingSurface } from '../store/types.ts';
import { CheckIcon, CrossIcon } from './icons.tsx';
import { RatingDetails } from './RatingDetails.tsx';

function ratedText(r: RatingView | null | undefined, where: RatingSurface): string | null {
  if (!r) return where === 'popup' ? null : 'Not rated yet.';
  if (!r.correction) return `Rated ${ratingLabel(r)}.`;
  if (r.kind === 'bad') return 'Rated Bad, with a correction.';
  return `Rated ${ratingLabel(r)}, with a correction: it counts as Bad, and your better answer as Good.`;
}

export function RatingControls(props: {
  turnId: number;
  rating: RatingView | null | undefined;
  where: RatingSurface;
  /** The answer's full text, when known: the correction can start from it. */
  answer?: string;
}) {
  const { turnId, rating, where } = props;
  const { busy, rate, undo, lastElsewhere, error, note } = useRein(
    useShallow((s) => ({
      busy: s.ratingTurnId !== null,
      rate: s.rate,
      undo: s.undo,
      lastElsewhere: where !== 'chat' && s.lastRated?.where === where && s.lastRated.turnId !== turnId,
      error: selectRateError(turnId)(s),
      note: selectUndoNote(turnId)(s),
    })),
  );
  const [more, setMore] = useState(false);
  // Folded again on another turn, and once a rating is stored (its line then says what was saved).
  useEffect(() => setMore(false), [turnId, rating?.id]);
  // The keys work on the card and in the popup (App's key handler); a Chat answer is rated by its buttons.
  const keys = where !== 'chat';
  const kind = rating ? countsAs(rating) : null;
  const state = error ? null : ratedText(rating, where);
  return (
    <div className="rating-controls">
      {/* Hidden, not unmounted: folding the options away keeps what was typed. */}
      <div hidden={!more}>
        <RatingDetails turnId={turnId} where={where} scale={rating?.scale ?? null} answer={props.answer} />
      </div>
      <div className="rating-bar">
        <div className="actions" role="group" aria-label="Rate this answer">
          <button type="button" className="rate good" aria-pressed={kind === 'good'} disabled={busy} onClick={() => void rate(turnId, 'good', where)}>
            <CheckIcon /> Good {keys && <kbd>1</kbd>}
          </button>
          <button type="button" className="rate bad" aria-pressed={kind === 'bad'} disabled={busy} onClick={() => void rate(turnId, 'bad', where)}>
            <CrossIcon /> Bad {keys && <kbd>2</kbd>}
          </button>
          <button type="button" className="link" aria-expanded={more} onClick={() => setMore(!more)}>
            {more ? 'Fewer options' : 'Score, correction, tags'}
          </button>
          {rating ? (
            <button type="button" className="undo" onClick={() => void undo(where, turnId)}>
              Undo {keys && <kbd>U</kbd>}
            </button>
          ) : (
            // The card and popup move on after a rating: here Undo takes back the one just given (as U does).
            lastElsewhere && (
              <button type="button" className="undo" onClick={() => void undo(where)}>
                Undo last rating {keys && <kbd>U</kbd>}
              </button>
            )
          )}
        </div>
        {(error || state) && (
          <p className="card-state" aria-live="polite" data-testid="card-state">
            {error ? <span className="error">{error.message}</span> : state}
          </p>
        )}
        {note && !error && (
          <p className="undo-note" role="status" data-testid="undo-note">
            {note}
          </p>
        )}
      </div>
    </div>
  );
}
