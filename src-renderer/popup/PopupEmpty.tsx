// The popup with nothing in its queue: the answers that still wait for a rating (captured before it opened, or
// while it was off) are a click away, and U or Undo still takes back the rating just given here.
import { useShallow } from 'zustand/shallow';
import { useRein } from '../store/react.tsx';
import { selectWaitingOutside } from '../store/popup.ts';

export function PopupEmpty() {
  const { waiting, takeWaiting, note, canUndo, undo, error } = useRein(
    useShallow((s) => ({
      waiting: selectWaitingOutside(s),
      takeWaiting: s.takeWaiting,
      note: s.undoNote?.text ?? null,
      canUndo: s.lastRated?.where === 'popup',
      undo: s.undo,
      error: s.popupError ?? s.rateError?.error ?? null,
    })),
  );
  return (
    <section className="popup empty" aria-live="polite">
      <p>Nothing new to rate right now.</p>
      {waiting > 0 && (
        <p className="popup-waiting">
          {waiting === 1 ? '1 answer waits for a rating.' : `${waiting} answers wait for a rating.`}{' '}
          <button type="button" className="secondary" onClick={() => void takeWaiting()}>
            Rate them here
          </button>
        </p>
      )}
      {canUndo && (
        <button type="button" className="undo" onClick={() => void undo('popup')}>
          Undo <kbd>U</kbd>
        </button>
      )}
      {note && (
        <p className="undo-note" role="status" data-testid="undo-note">
          {note}
        </p>
      )}
      {error && <p className="error">{error.message}</p>}
    </section>
  );
}
