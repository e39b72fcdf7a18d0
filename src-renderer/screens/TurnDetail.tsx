import { useState } from 'react';
import { useShallow } from 'zustand/shallow';
import type { ContextMessage } from '../../src-main/common/domain.ts';
import { Confirm } from '../components/Confirm.tsx';
import { sourceName, shownSession } from '../components/format.ts';
import { Markdown } from '../components/Markdown.tsx';
import { ToolCalls } from '../components/ToolCalls.tsx';
import { useRein } from '../store/react.tsx';
import { predictionWords, ratingLabel, ratingRoundText, selectOpenTurn } from '../store/ratings.ts';

/** The context's messages other than tool calls: the agent's words between its calls, or the earlier conversation. */
function OtherMessages(props: { context: readonly ContextMessage[] }) {
  const messages = props.context.filter((m) => m.type !== 'tool_use' && m.type !== 'tool_result');
  if (messages.length === 0) return null;
  return (
    <details className="context">
      <summary>Other messages ({messages.length})</summary>
      {messages.map((m, i) => (
        <div key={i} className="context-msg">
          <p className="label">{m.role}</p>
          <Markdown text={m.content} />
        </div>
      ))}
    </details>
  );
}

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
        <h3 id="detail-title">
          {sourceName(turn.source)} {shownSession(turn) ? `· ${shownSession(turn)}` : ''}
        </h3>
        <button type="button" className="secondary" onClick={() => void openTurn(null)}>
          Close
        </button>
      </div>
      <p className="muted small">
        {new Date(turn.createdAt).toLocaleString()}
        {turn.model && ` · ${turn.model}`}
        {turn.truncated && ' · shortened when captured'}
      </p>
      {predictionWords(turn.rewardPrediction) !== null && (
        <p className="muted small" data-testid="reward-prediction">
          {predictionWords(turn.rewardPrediction)}
        </p>
      )}
      <p className="label">Prompt</p>
      <Markdown className="prompt full" text={turn.prompt || '(empty)'} />
      <p className="label">Answer</p>
      <Markdown className="answer full" text={turn.response || '(empty)'} />
      <ToolCalls context={turn.context} />
      <OtherMessages context={turn.context} />
      {r?.correction && (
        <>
          <p className="label">Your better answer</p>
          <Markdown className="correction full" text={r.correction} />
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
