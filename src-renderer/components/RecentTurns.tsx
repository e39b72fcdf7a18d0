import { useShallow } from 'zustand/shallow';
import type { TurnSummary } from '../../src-main/common/domain.ts';
import { useRein } from '../store/react.tsx';
import { firstLines, selectCurrentTurn, selectOtherTurns } from '../store/turns.ts';
import { timeAgo } from './format.ts';
import { useNow } from './useNow.ts';

function RatingBadge(props: { turn: TurnSummary }) {
  const r = props.turn.rating;
  if (r?.kind === 'good') return <span className="badge good">Good</span>;
  if (r?.kind === 'bad') return <span className="badge bad">Bad</span>;
  if (r?.kind === 'scale') return <span className="badge scale">{r.scale}/5</span>;
  return <span className={`badge ${props.turn.state}`}>{props.turn.state === 'unrated' ? 'Unrated' : props.turn.state}</span>;
}

export function RecentTurns() {
  const now = useNow();
  const { turns, earlier } = useRein(
    // The card shows the newest turn, so the count here is of the turns before it.
    useShallow((s) => ({ turns: selectOtherTurns(s), earlier: Math.max(0, s.turnsTotal - (selectCurrentTurn(s) ? 1 : 0)) })),
  );
  return (
    <section className="recent" aria-labelledby="recent-title">
      <h2 id="recent-title">
        Earlier answers <span className="count">{earlier}</span>
      </h2>
      {turns.length === 0 ? (
        <p className="muted">Answers you have already seen are listed here.</p>
      ) : (
        <ol className="turns" data-testid="recent-turns">
          {turns.map((t) => (
            <li key={t.id} className="turn" data-turn-id={t.id}>
              <RatingBadge turn={t} />
              <div className="turn-text">
                <span className="turn-prompt">{firstLines(t.promptPreview, 1, 160).text || '(empty prompt)'}</span>
                <span className="turn-meta">
                  {t.source}
                  {t.session ? ` · ${t.session}` : ''} · <time dateTime={new Date(t.createdAt).toISOString()}>{timeAgo(t.createdAt, now)}</time>
                </span>
              </div>
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}
