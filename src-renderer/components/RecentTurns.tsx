import { useShallow } from 'zustand/shallow';
import type { TurnSummary } from '../../src-main/common/domain.ts';
import { useRein } from '../store/react.tsx';
import { firstLines, selectOtherTurns } from '../store/turns.ts';
import { timeAgo } from './format.ts';

function RatingBadge(props: { turn: TurnSummary }) {
  const r = props.turn.rating;
  if (r?.kind === 'good') return <span className="badge good">Good</span>;
  if (r?.kind === 'bad') return <span className="badge bad">Bad</span>;
  if (r?.kind === 'scale') return <span className="badge scale">{r.scale}/5</span>;
  return <span className={`badge ${props.turn.state}`}>{props.turn.state === 'unrated' ? 'Unrated' : props.turn.state}</span>;
}

export function RecentTurns() {
  const { turns, total } = useRein(useShallow((s) => ({ turns: selectOtherTurns(s), total: s.turnsTotal })));
  return (
    <section className="recent" aria-labelledby="recent-title">
      <h2 id="recent-title">
        Recent answers <span className="count">{total}</span>
      </h2>
      {turns.length === 0 ? (
        <p className="muted">Earlier answers will be listed here.</p>
      ) : (
        <ol className="turns" data-testid="recent-turns">
          {turns.map((t) => (
            <li key={t.id} className="turn" data-turn-id={t.id}>
              <RatingBadge turn={t} />
              <div className="turn-text">
                <span className="turn-prompt">{firstLines(t.promptPreview, 1, 160).text || '(empty prompt)'}</span>
                <span className="turn-meta">
                  {t.source}
                  {t.session ? ` · ${t.session}` : ''} · <time dateTime={new Date(t.createdAt).toISOString()}>{timeAgo(t.createdAt)}</time>
                </span>
              </div>
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}
