import { useEffect } from 'react';
import { useShallow } from 'zustand/shallow';
import { Nav } from './components/Nav.tsx';
import { RatingCard } from './components/RatingCard.tsx';
import { RecentTurns } from './components/RecentTurns.tsx';
import { StatusHeader } from './components/StatusHeader.tsx';
import { TrainingPanel } from './components/TrainingPanel.tsx';
import { PopupCard } from './popup/PopupCard.tsx';
import type { Transport } from './services/api.ts';
import { selectPopupTurn } from './store/popup.ts';
import { selectDraftTyped } from './store/rating.ts';
import { useRein, useReinStore } from './store/react.tsx';
import { selectCurrentTurn } from './store/turns.ts';
import { VIEWS } from './store/nav.ts';
import { Ratings } from './screens/Ratings.tsx';
import { SettingsView } from './screens/Settings.tsx';
import { Setup } from './screens/Setup.tsx';
import { Training } from './screens/Training.tsx';
import { Versions } from './screens/Versions.tsx';
import { Arena } from './screens/Arena.tsx';
import { Chat } from './screens/Chat.tsx';

const KEY_TO_RATING = { '1': 'good', '2': 'bad' } as const;
const KEY_TO_WEAK = { y: 'confirm', f: 'flip', d: 'dismiss' } as const;

/**
 * Keys 1 and 2 rate the popup's turn (in the popup window) or the Rate card's, with whatever was typed under "Score,
 * correction, tags"; U takes back the rating just given there (on the Chat screen, the last Chat rating). Not while
 * the user is typing or holds a modifier. The handler reads the store when the key is pressed: a listener bound to the
 * last render's turn rated the previous card when a key came between a new turn's paint and the effect that re-bound it.
 */
function useRatingKeys(withPopup: boolean) {
  const store = useReinStore();
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.ctrlKey || e.metaKey || e.altKey || e.repeat) return;
      const t = e.target as HTMLElement | null;
      if (t && (t.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(t.tagName))) return;
      if (document.querySelector('dialog[open]')) return;
      const s = store.getState();
      const where = withPopup ? 'popup' : s.view === 'rate' ? 'card' : s.view === 'chat' ? 'chat' : null;
      if (where === null) return;
      if (e.key === 'u' || e.key === 'U') {
        e.preventDefault();
        void s.undo(where);
        return;
      }
      const turn = where === 'popup' ? selectPopupTurn(s) : where === 'card' ? selectCurrentTurn(s) : null;
      // Y, F, D answer the weak label of the card's or the popup's turn (components/WeakLabel.tsx), when it shows one.
      const weakAction = KEY_TO_WEAK[e.key.toLowerCase() as keyof typeof KEY_TO_WEAK];
      if (weakAction && turn && turn.rating === null && s.weak[turn.id]) {
        e.preventDefault();
        void s.answerWeak(turn.id, weakAction);
        return;
      }
      const value = KEY_TO_RATING[e.key as keyof typeof KEY_TO_RATING];
      if (!value || !turn) return;
      e.preventDefault();
      // Pressing the rating the card already shows changes nothing, unless words were typed to go with it.
      if (turn.rating?.kind !== value || turn.rating.scale !== null || selectDraftTyped(turn.id)(s)) void s.rate(turn.id, value, where);
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [store, withPopup]);
}

/** Every screen's h1, for screen readers and the document outline (the tabs show the same name to the eye). */
function ScreenTitle() {
  const view = useRein((s) => s.view);
  return <h1 className="sr-only">{VIEWS.find((v) => v.id === view)?.label}</h1>;
}

function Screen() {
  const view = useRein((s) => s.view);
  switch (view) {
    case 'training':
      return <Training />;
    case 'versions':
      return <Versions />;
    case 'chat':
      return <Chat />;
    case 'arena':
      return <Arena />;
    case 'ratings':
      return <Ratings />;
    case 'setup':
      return <Setup />;
    case 'settings':
      return <SettingsView />;
    default:
      return (
        <>
          <RatingCard />
          <TrainingPanel />
          <RecentTurns />
        </>
      );
  }
}

/** First run (no model chosen yet): open the wizard once the status says so. */
function useFirstRun() {
  const { configured, setView } = useRein(useShallow((s) => ({ configured: s.status?.model.configured, setView: s.setView })));
  useEffect(() => {
    if (configured === false && !sessionStorage.getItem('rein.wizardShown')) {
      sessionStorage.setItem('rein.wizardShown', '1');
      setView('setup');
    }
  }, [configured, setView]);
}

export function App(props: { transport: Transport; window: 'main' | 'popup' }) {
  // In Electron the popup is its own window near the tray. A browser has one rating surface, the Rate screen: a
  // second panel there showed another turn under the same 1/2 keys.
  useRatingKeys(props.window === 'popup');
  useFirstRun();
  if (props.window === 'popup') {
    return (
      <div className="popup-window">
        <PopupCard />
      </div>
    );
  }
  return (
    <div className="app">
      <StatusHeader transport={props.transport} />
      <Nav />
      <main className="content">
        <ScreenTitle />
        <Screen />
      </main>
    </div>
  );
}
