// The popup: one captured turn asking for Good or Bad, in its own small Electron window near the tray (the headless
// web UI has no popup: its Rate screen is the one rating surface). Keys 1 and 2 rate it (App's key handler), the optional 1-5 scale,
// correction and tags go with the rating, and closing it (or the timeout) counts the turn as ignored.
import { useEffect, useRef, useState } from 'react';
import { useShallow } from 'zustand/shallow';
import { CheckIcon, CrossIcon } from '../components/icons.tsx';
import { useRein } from '../store/react.tsx';
import { selectAskReason, selectPopupTimeout, selectPopupTurn, selectQueueLength } from '../store/popup.ts';
import { Exchange } from '../components/Exchange.tsx';
import { PopupDetails } from './PopupDetails.tsx';

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
  const { turn, waiting, timeout, dismiss, ratePopup, error, why } = useRein(
    useShallow((s) => ({
      turn: selectPopupTurn(s),
      why: selectAskReason(s),
      waiting: selectQueueLength(s),
      timeout: selectPopupTimeout(s),
      dismiss: s.dismiss,
      ratePopup: s.ratePopup,
      error: s.popupError,
    })),
  );
  const [more, setMore] = useState(false);
  const [hover, setHover] = useState(false);
  const [focus, setFocus] = useState(false);
  // Words typed into the correction or tags: the popup then waits for the user however long it takes.
  const [draft, setDraft] = useState(false);
  const left = useCountdown(turn?.id ?? null, timeout, dismiss, hover || focus || draft);
  useEffect(() => {
    setMore(false);
    setDraft(false);
  }, [turn?.id]);
  if (!turn) {
    return (
      <section className="popup empty" aria-live="polite">
        <p>Nothing to rate right now.</p>
      </section>
    );
  }
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
      <div className="actions" role="group" aria-label="Rate this answer">
        <button type="button" className="rate good" onClick={() => void ratePopup(turn.id, { value: 'good' })}>
          <CheckIcon /> Good <kbd>1</kbd>
        </button>
        <button type="button" className="rate bad" onClick={() => void ratePopup(turn.id, { value: 'bad' })}>
          <CrossIcon /> Bad <kbd>2</kbd>
        </button>
        <button type="button" className="link" aria-expanded={more} onClick={() => setMore(!more)}>
          {more ? 'Fewer options' : 'Score, correction, tags'}
        </button>
      </div>
      {/* Hidden, not unmounted: folding the options away keeps what was typed. */}
      <div hidden={!more}>
        <PopupDetails key={turn.id} turnId={turn.id} onDraft={setDraft} />
      </div>
      <p className="popup-foot" aria-live="polite">
        {error ? (
          <span className="error">{error.message}</span>
        ) : left === null ? null : draft ? (
          <span data-testid="popup-timer">Stays open until you save or close: you typed a correction or tags.</span>
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
