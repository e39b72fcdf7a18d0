import { useShallow } from 'zustand/shallow';
import type { TurnSummary } from '../../src-main/common/domain.ts';
import type { InboxFilter } from '../store/types.ts';
import { useRein } from '../store/react.tsx';
import { firstLines, selectCurrentTurn, selectMoreTurns, selectOtherTurns } from '../store/turns.ts';
import { timeAgo } from './format.ts';
import { useNow } from './useNow.ts';

function RatingBadge(props: { turn: TurnSummary }) {
  const r = props.turn.rating;
  if (r?.kind === 'good') return <span className="badge good">Good</span>;
  if (r?.kind === 'bad') return <span className="badge bad">Bad</span>;
  if (r?.kind === 'scale') return <span className="badge scale">{r.scale}/5</span>;
  return <span className={`badge ${props.turn.state}`}>{props.turn.state === 'unrated' ? 'Unrated' : props.turn.state}</span>;
}

const FILTERS: { id: InboxFilter; label: string; empty: string }[] = [
  { id: 'all', label: 'Recent', empty: 'Answers you have already seen are listed here.' },
  { id: 'unrated', label: 'Unrated', empty: 'Every answer has a rating or was set aside.' },
  { id: 'ignored', label: 'Ignored', empty: 'No ignored answers: closing the popup or skipping one puts it here.' },
  { id: 'expired', label: 'Expired', empty: 'No expired answers: unrated ones land here after the expiry set in Settings.' },
];

export function RecentTurns() {
  const now = useNow();
  const { turns, earlier, filter, setFilter, showTurn, more, loadMore } = useRein(
    useShallow((s) => ({
      turns: selectOtherTurns(s),
      // The card shows one turn, so the count here is of the others.
      earlier:
        s.inboxFilter === 'all'
          ? Math.max(0, s.turnsTotal - (selectCurrentTurn(s) ? 1 : 0))
          : Math.max(0, s.inboxTotal - (s.inboxTurns.some((t) => t.id === selectCurrentTurn(s)?.id) ? 1 : 0)),
      filter: s.inboxFilter,
      setFilter: s.setInboxFilter,
      showTurn: s.showTurn,
      more: selectMoreTurns(s),
      loadMore: s.loadMoreTurns,
    })),
  );
  const open = (id: number) => {
    showTurn(id);
    document.querySelector('[data-testid=rating-card]')?.scrollIntoView({ block: 'start' });
  };
  return (
    <section className="recent" aria-labelledby="recent-title">
      <div className="recent-head">
        <h2 id="recent-title">
          Earlier answers <span className="count">{earlier}</span>
        </h2>
        <div className="segmented" role="group" aria-label="Show" data-testid="inbox-filters">
          {FILTERS.map((f) => (
            <button key={f.id} type="button" aria-pressed={filter === f.id} onClick={() => void setFilter(f.id)}>
              {f.label}
            </button>
          ))}
        </div>
      </div>
      {turns.length === 0 ? (
        <p className="muted">{FILTERS.find((f) => f.id === filter)?.empty}</p>
      ) : (
        <ol className="turns" data-testid="recent-turns">
          {turns.map((t) => (
            <li key={t.id} className="turn" data-turn-id={t.id}>
              <button type="button" className="turn-open" onClick={() => open(t.id)} title="Open on the card to rate">
                <RatingBadge turn={t} />
                <span className="turn-text">
                  <span className="turn-prompt" dir="auto">{firstLines(t.promptPreview, 1, 160).text || '(empty prompt)'}</span>
                  <span className="turn-meta">
                    {t.source}
                    {t.session ? ` · ${t.session}` : ''} · <time dateTime={new Date(t.createdAt).toISOString()}>{timeAgo(t.createdAt, now)}</time>
                  </span>
                </span>
              </button>
            </li>
          ))}
        </ol>
      )}
      {more > 0 && (
        <button type="button" className="secondary load-more" onClick={() => void loadMore()}>
          Show more answers ({more} not listed)
        </button>
      )}
    </section>
  );
}
