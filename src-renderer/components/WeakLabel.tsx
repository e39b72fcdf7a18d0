// The weak label on the Rate card and the popup: "Rein read this as Bad because you wrote: '…'", with one key each to confirm it
// (Y), flip it (F) or dismiss it (D). Never a rating by itself: confirming or flipping is the user's rating.
import { useEffect } from 'react';
import { useShallow } from 'zustand/shallow';
import { useRein } from '../store/react.tsx';
import { selectWeak } from '../store/weak.ts';

export function WeakLabel(props: { turnId: number; rated: boolean }) {
  const { turnId, rated } = props;
  const { weak, load, answer, error } = useRein(
    useShallow((s) => ({
      weak: selectWeak(turnId)(s),
      load: s.loadWeak,
      answer: s.answerWeak,
      error: s.weakError?.turnId === turnId ? s.weakError.message : null,
    })),
  );
  useEffect(() => {
    void load(turnId);
  }, [turnId, load]);
  if (weak === null || rated) return null;
  // The buttons say which rating each one gives: "Confirm" alone leaves a new user guessing.
  const [as, other] = weak.value === 'good' ? ['Good', 'Bad'] : ['Bad', 'Good'];
  return (
    <div className={`weak-label ${weak.value}`} data-testid="weak-label" role="group" aria-label="Rein's reading of your reaction">
      <p>{weak.explanation}</p>
      <button type="button" onClick={() => void answer(turnId, 'confirm')}>
        Confirm {as} <kbd>Y</kbd>
      </button>
      <button type="button" onClick={() => void answer(turnId, 'flip')}>
        Flip to {other} <kbd>F</kbd>
      </button>
      <button type="button" className="link" onClick={() => void answer(turnId, 'dismiss')}>
        Dismiss <kbd>D</kbd>
      </button>
      {error && <span className="error">{error}</span>}
    </div>
  );
}
