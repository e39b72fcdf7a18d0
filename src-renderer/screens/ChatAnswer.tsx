// One answer of the chat: markdown with highlighted code, who answered, and the inline rating: Good/Bad, 1-5, or a
// correction (the answer pre-filled, to edit into what it should have said).
import { useState } from 'react';
import { Markdown } from '../components/Markdown.tsx';
import type { ChatEntry, ChatRating } from '../store/chat.ts';

const versionLabel = (v: number | null | undefined) => (v === null || v === undefined ? 'an unknown version' : v === 0 ? 'the base model (no adapter)' : `v${v}`);

function ratedText(e: ChatEntry): string {
  const r = e.rating;
  if (!r) return '';
  if (r.correction) return 'Rated with a correction.';
  return r.kind === 'scale' ? `Rated ${r.scale}/5.` : `Rated ${r.kind === 'good' ? 'Good' : 'Bad'}.`;
}

export function ChatAnswer(props: { entry: ChatEntry; index: number; error: string | null; onRate: (index: number, r: ChatRating) => void }) {
  const { entry: e, index } = props;
  const [correcting, setCorrecting] = useState(false);
  const [draft, setDraft] = useState('');
  const rated = e.rating?.kind ?? null;
  const canRate = !e.streaming && e.turnId != null;
  return (
    <article className="chat-msg assistant" data-testid="chat-answer" data-turn-id={e.turnId ?? undefined} aria-busy={e.streaming ? true : undefined}>
      <div className="chat-who muted small">
        {e.streaming ? 'Answering…' : `Answered by ${versionLabel(e.version)}${e.onPolicy ? '' : ' · stored as text only'}`}
      </div>
      {e.content === '' && e.streaming ? <p className="muted">…</p> : <Markdown text={e.content} />}
      {e.note && <p className="muted small">{e.note}</p>}
      {canRate && (
        <div className="chat-rate" role="group" aria-label="Rate this answer">
          <button type="button" className="rate good small-rate" aria-pressed={rated === 'good' && !e.rating?.correction} onClick={() => props.onRate(index, { value: 'good' })}>
            Good
          </button>
          <button type="button" className="rate bad small-rate" aria-pressed={rated === 'bad' && !e.rating?.correction} onClick={() => props.onRate(index, { value: 'bad' })}>
            Bad
          </button>
          <span className="scale-row" role="group" aria-label="Score 1 to 5">
            <span className="muted small" aria-hidden="true">
              or score
            </span>
            {([1, 2, 3, 4, 5] as const).map((n) => (
              <button key={n} type="button" className="score" aria-label={`Score ${n} of 5`} aria-pressed={e.rating?.scale === n} onClick={() => props.onRate(index, { value: n })}>
                {n}
              </button>
            ))}
          </span>
          <button
            type="button"
            className="secondary"
            aria-expanded={correcting}
            onClick={() => {
              setDraft(e.content);
              setCorrecting(!correcting);
            }}
          >
            Correct it…
          </button>
          <span className="muted small" role="status">
            {ratedText(e)}
          </span>
        </div>
      )}
      {correcting && (
        <form
          className="chat-correct"
          onSubmit={(ev) => {
            ev.preventDefault();
            if (draft.trim() === '' || draft === e.content) return;
            props.onRate(index, { value: 'bad', correction: draft });
            setCorrecting(false);
          }}
        >
          <label className="label" htmlFor={`correct-${index}`}>
            Edit the answer into what it should have said
          </label>
          <textarea id={`correct-${index}`} rows={Math.min(14, Math.max(4, draft.split('\n').length + 1))} value={draft} onChange={(ev) => setDraft(ev.target.value)} />
          <div className="actions">
            <button type="submit" className="primary" disabled={draft.trim() === '' || draft === e.content}>
              Save correction
            </button>
            <button type="button" className="secondary" onClick={() => setCorrecting(false)}>
              Cancel
            </button>
          </div>
        </form>
      )}
      {props.error && (
        <p className="error" role="alert">
          {props.error}
        </p>
      )}
    </article>
  );
}
