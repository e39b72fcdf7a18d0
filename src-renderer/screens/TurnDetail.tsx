import { useState } from 'react';
import { useShallow } from 'zustand/shallow';
import { Confirm } from '../components/Confirm.tsx';
import { useRein } from '../store/react.tsx';
import { ratingLabel, ratingRoundText, selectOpenTurn } from '../store/ratings.ts';

/** One turn in full: its context, prompt and answer, its rating, and the edits. */
export function TurnDetail() {
  const { turn, openTurn, rerate, deleteRating, deleteTurn, filterTag } = useRein(
    useShallow((s) => ({
      turn: selectOpenTurn(s),
      openTurn: s.openTurn,
      rerate: s.rerate,
      deleteRating: s.deleteRating,
      deleteTurn: s.deleteTurn,
      filterTag: s.setRatingFilters,
    })),
  );
  const [confirmDelete, setConfirmDelete] = useState(false);
  if (!turn) return <section className="panel muted">Loading the turn…</section>;
  const r = turn.rating;
  return (
    <section className="panel turn-detail" aria-labelledby="detail-title" data-testid="turn-detail">
      <div className="panel-row">
        <h2 id="detail-title">
          {turn.source} {turn.session ? `· ${turn.session}` : ''}
        </h2>
        <button type="button" className="secondary" onClick={() => void openTurn(null)}>
          Close
        </button>
      </div>
      <p className="muted small">
        {new Date(turn.createdAt).toLocaleString()}
        {turn.model && ` · ${turn.model}`}
        {turn.truncated && ' · shortened when captured'}
      </p>
      {turn.context.length > 0 && (
        <details className="context">
          <summary>Earlier conversation ({turn.context.length} messages)</summary>
          {turn.context.map((m, i) => (
            <div key={i} className="context-msg">
              <p className="label">{m.role}</p>
              <pre>{m.content}</pre>
            </div>
          ))}
        </details>
      )}
      <p className="label">Prompt</p>
      <pre className="prompt full">{turn.prompt || '(empty)'}</pre>
      <p className="label">Answer</p>
      <pre className="answer full">{turn.response || '(empty)'}</pre>
      {r?.correction && (
        <>
          <p className="label">Your better answer</p>
          <pre className="answer full">{r.correction}</pre>
        </>
      )}
      <p data-testid="detail-rating">
        {r ? `Rated ${ratingLabel(r)} · ${ratingRoundText(r)}` : 'Not rated.'}
      </p>
      {r && r.tags.length > 0 && (
        <p className="tag-row small">
          <span className="muted">Tags:</span>
          {r.tags.map((t) => (
            <button key={t} type="button" className="tag-chip" title={`Show only ratings tagged ${t}`} onClick={() => filterTag({ tag: t })}>
              {t}
            </button>
          ))}
        </p>
      )}
      {r?.comment && (
        <>
          <p className="label">Your comment</p>
          <p className="comment" dir="auto" data-testid="detail-comment">
            {r.comment}
          </p>
        </>
      )}
      <div className="actions" role="group" aria-label="Change the rating">
        <button type="button" className="rate good" aria-pressed={r?.kind === 'good'} onClick={() => void rerate(turn.id, 'good')}>
          Good
        </button>
        <button type="button" className="rate bad" aria-pressed={r?.kind === 'bad'} onClick={() => void rerate(turn.id, 'bad')}>
          Bad
        </button>
        {r && (
          <button type="button" className="secondary" onClick={() => void deleteRating(r.id)}>
            Delete rating
          </button>
        )}
        <button type="button" className="danger" onClick={() => setConfirmDelete(true)}>
          Delete turn…
        </button>
      </div>
      {confirmDelete && (
        <Confirm
          title="Delete this turn?"
          confirmLabel="Delete turn and its ratings"
          danger
          onCancel={() => setConfirmDelete(false)}
          onConfirm={() => {
            setConfirmDelete(false);
            void deleteTurn(turn.id);
          }}
        >
          <p>The prompt, the answer and every rating of it are deleted from Rein. Adapters already trained on it keep what they learned.</p>
        </Confirm>
      )}
    </section>
  );
}
