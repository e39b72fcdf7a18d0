import { useEffect } from 'react';
import { useShallow } from 'zustand/shallow';
import { RatingCard } from './components/RatingCard.tsx';
import { RecentTurns } from './components/RecentTurns.tsx';
import { StatusHeader } from './components/StatusHeader.tsx';
import { TrainingPanel } from './components/TrainingPanel.tsx';
import type { Transport } from './services/api.ts';
import { useRein } from './store/react.tsx';
import { selectCurrentTurn } from './store/turns.ts';

const KEY_TO_RATING = { '1': 'good', '2': 'bad' } as const;

/** Keys 1 and 2 rate the card's turn and U undoes, unless the user is typing or holds a modifier. */
function useRatingKeys() {
  const { current, rate, undo } = useRein(useShallow((s) => ({ current: selectCurrentTurn(s), rate: s.rate, undo: s.undo })));
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.ctrlKey || e.metaKey || e.altKey || e.repeat) return;
      const t = e.target as HTMLElement | null;
      if (t && (t.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(t.tagName))) return;
      if (e.key === 'u' || e.key === 'U') {
        e.preventDefault();
        void undo();
        return;
      }
      const value = KEY_TO_RATING[e.key as keyof typeof KEY_TO_RATING];
      if (!value || !current) return;
      e.preventDefault();
      if (current.rating?.kind !== value) void rate(current.id, value);
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [current, rate, undo]);
}

export function App(props: { transport: Transport }) {
  useRatingKeys();
  return (
    <div className="app">
      <StatusHeader transport={props.transport} />
      <main className="content">
        <RatingCard />
        <TrainingPanel />
        <RecentTurns />
      </main>
    </div>
  );
}
