// The popup: one captured turn asking for Good or Bad, in its own small Electron window near the tray (the headless
// web UI has no popup: its Rate screen is the one rating surface). Keys 1 and 2 rate it (App's key handler), the optional 1-5 scale,
// correction and tags go with the rating, and closing it (or the timeout) counts the turn as ignored.
import { useEffect, useState } from 'react';
import { useShallow } from 'zustand/shallow';
import type { TurnSummary } from '../../src-main/common/domain.ts';
import { CheckIcon, CrossIcon } from '../components/icons.tsx';
import { useRein } from '../store/react.tsx';
import { selectPopupTimeout, selectPopupTurn, selectQueueLength } from '../store/popup.ts';
import { Exchange } from '../components/Exchange.tsx';
import { PopupDetails } from './PopupDetails.tsx';

function useCountdown(turn: TurnSummary | null, seconds: number, onExpire: (id: number) => void): number | null {
  const [left, setLeft] = useState<number | null>(null);
  useEffect(() => {
    if (!turn || seconds <= 0) {
      setLeft(null);
      return;
    }
    const end = Date.now() + seconds * 1000;
    setLeft(seconds);
    const t = setInterval(() => {
      const s = Math.ceil((end - Date.now()) / 1000);
      if (s <= 0) {
        clearInterval(t);
        onExpire(turn.id);
      } else setLeft(s);
    }, 250);
    return () => clearInterval(t);
  }, [turn, seconds, onExpire]);
  return left;
}

export function PopupCard() {
  const { turn, waiting, timeout, dismiss, ratePopup, error } = useRein(
    useShallow((s) => ({
      turn: selectPopupTurn(s),
      waiting: selectQueueLength(s),
      timeout: selectPopupTimeout(s),
      dismiss: s.dismiss,
      ratePopup: s.ratePopup,
      error: s.popupError,
    })),
  );
  const [more, setMore] = useState(false);
  const left = useCountdown(turn, timeout, dismiss);
  useEffect(() => {
    setMore(false);
  }, [turn?.id]);
  if (!turn) {
    return (
      <section className="popup empty" aria-live="polite">
        <p>Nothing to rate right now.</p>
      </section>
    );
  }
  return (
    <section className="popup" role="dialog" aria-modal="false" aria-labelledby="popup-title" data-testid="popup" data-turn-id={turn.id}>
      <header className="popup-head">
        <h2 id="popup-title">{turn.source}</h2>
        {turn.session && <span className="session" title={turn.session}>{turn.session}</span>}
        {waiting > 1 && <span className="popup-queue" data-testid="popup-queue">1 of {waiting}</span>}
        <button type="button" className="icon-button" aria-label="Close (counts as ignored)" title="Close (counts as ignored)" onClick={() => void dismiss(turn.id)}>
          <CrossIcon />
        </button>
      </header>
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
      {more && <PopupDetails turnId={turn.id} />}
      <p className="popup-foot" aria-live="polite">
        {error ? <span className="error">{error.message}</span> : left !== null ? <span>Closes in {left} s if you do nothing (counts as ignored).</span> : null}
      </p>
      {left !== null && <progress className="popup-timer" max={timeout} value={left} aria-hidden="true" />}
    </section>
  );
}
