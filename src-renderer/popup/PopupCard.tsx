// The popup: one captured turn asking for Good or Bad, in its own small Electron window near the tray (the headless
// web UI has no popup: its Rate screen is the one rating surface). Keys 1 and 2 rate it and U undoes (App's key
// handler), the rating controls are the card's (a score, correction, tags and comment go with whichever rating), and
// closing it (or the timeout) counts the turn as ignored. What the user wrote next in the same session shows as the
// card's weak label (Y confirms, F flips, D dismisses). Answers that waited before it opened can be rated here too.
import { useEffect, useRef, useState } from 'react';
import { useShallow } from 'zustand/shallow';
import { CrossIcon } from '../components/icons.tsx';
import { useRein } from '../store/react.tsx';
import { selectAskReason, selectPopupTimeout, selectPopupTurn, selectQueueLength } from '../store/popup.ts';
import { selectDraftTyped } from '../store/rating.ts';
import { selectFullTurn } from '../store/ratings.ts';
import { Exchange } from '../components/Exchange.tsx';
import { RatingControls } from '../components/RatingControls.tsx';
import { WeakLabel } from '../components/WeakLabel.tsx';
import { PopupEmpty } from './PopupEmpty.tsx';

/**
 * Seconds left before the popup counts its turn as ignored, or null when it has no timeout. The clock stops while
 * `held` (pointer over the popup, focus in it, words typed into it) and resumes where it stopped.
 */
function useCountdown(turnId: number | null, seconds: number, onExpire: (id: number) => void, held: boolean): number | null {
  const [left, setLeft] = useState<number | null>(null);
  const leftMs = useRef(0);
  useEffect(() => {
    leftMs.current = seconds * 1000;
    setLeft(turnId === null || seconds <= 0 ? null : seconds);
  }, [turnId, seconds]);
  useEffect(() => {
    if (turnId === null || seconds <= 0 || held) return;
    let last = Date.now();
    const tick = () => {
      const now = Date.now();
      leftMs.current -= now - last;
      last = now;
    };
    const t = setInterval(() => {
      tick();
      if (leftMs.current <= 0) {
        clearInterval(t);
        onExpire(turnId);
      } else setLeft(Math.ceil(leftMs.current / 1000));
    }, 250);
    return () => {
      tick();
      clearInterval(t);
    };
  }, [turnId, seconds, held, onExpire]);
  return left;
}

export function PopupCard() {
  const { turn, waiting, timeout, dismiss, error, why, draft, answer } = useRein(
    useShallow((s) => {
      const turn = selectPopupTurn(s);
      return {
        turn,
        why: selectAskReason(s),
        waiting: selectQueueLength(s),
        timeout: selectPopupTimeout(s),
        dismiss: s.dismiss,
        error: s.popupError,
        // Words typed into the correction, tags or comment: the popup then waits for the user however long it takes.
        draft: selectDraftTyped(turn?.id ?? null)(s),
        answer: turn ? selectFullTurn(turn.id)(s)?.response : undefined,
      };
    }),
  );
  const [hover, setHover] = useState(false);
  const [focus, setFocus] = useState(false);
  const left = useCountdown(turn?.id ?? null, timeout, dismiss, hover || focus || draft);
  if (!turn) return <PopupEmpty />;
  return (
    <section
      className="popup"
      role="dialog"
      aria-modal="false"
      aria-labelledby="popup-title"
      data-testid="popup"
      data-turn-id={turn.id}
      onPointerEnter={() => setHover(true)}
      onPointerLeave={() => setHover(false)}
      onFocus={() => setFocus(true)}
      onBlur={(e) => setFocus(e.currentTarget.contains(e.relatedTarget))}
    >
      <header className="popup-head">
        <h2 id="popup-title">{turn.source}</h2>
        {turn.session && <span className="session" title={turn.session}>{turn.session}</span>}
        {waiting > 1 && <span className="popup-queue" data-testid="popup-queue">1 of {waiting}</span>}
        <button type="button" className="icon-button" aria-label="Close (counts as ignored)" title="Close (counts as ignored)" onClick={() => void dismiss(turn.id)}>
          <CrossIcon />
        </button>
      </header>
      {why && (
        <p className="popup-why" data-testid="popup-why">
          Asking because {why}.
        </p>
      )}
      <div className="popup-text">
        <Exchange turn={turn} compact />
      </div>
      <WeakLabel turnId={turn.id} rated={turn.rating !== null} />
      <RatingControls turnId={turn.id} rating={turn.rating} where="popup" answer={answer} />
      <p className="popup-foot" aria-live="polite">
        {error ? (
          <span className="error">{error.message}</span>
        ) : left === null ? null : draft ? (
          <span data-testid="popup-timer">Stays open until you rate or close: you typed a correction, tags or a comment.</span>
        ) : hover || focus ? (
          <span data-testid="popup-timer">Paused while you read ({left} s left).</span>
        ) : (
          <span data-testid="popup-timer">Closes in {left} s if you do nothing (counts as ignored).</span>
        )}
      </p>
      {left !== null && <progress className="popup-timer" max={timeout} value={left} aria-hidden="true" />}
    </section>
  );
}
