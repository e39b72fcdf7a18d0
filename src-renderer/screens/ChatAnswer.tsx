// One answer of the chat: markdown with highlighted code, who answered, and the rating controls every surface has
// (Good/Bad, and a score, a correction that can start from the answer, tags and a comment).
import { Markdown } from '../components/Markdown.tsx';
import { RatingControls } from '../components/RatingControls.tsx';
import type { ChatEntry } from '../store/types.ts';

const versionLabel = (v: number | null | undefined) => (v === null || v === undefined ? 'an unknown version' : v === 0 ? 'the base model (no adapter)' : `v${v}`);

export function ChatAnswer(props: { entry: ChatEntry }) {
  const { entry: e } = props;
  const canRate = !e.streaming && e.turnId != null;
  return (
    <article className="chat-msg assistant" data-testid="chat-answer" data-turn-id={e.turnId ?? undefined} aria-busy={e.streaming ? true : undefined}>
      <div className="chat-who muted small">
        {e.streaming ? 'Answering…' : `Answered by ${versionLabel(e.version)}${e.onPolicy ? '' : ' · stored as text only'}`}
      </div>
      {e.content === '' && e.streaming ? <p className="muted">…</p> : <Markdown text={e.content} />}
      {e.note && <p className="muted small">{e.note}</p>}
      {canRate && <RatingControls turnId={e.turnId!} rating={e.rating} where="chat" answer={e.content} />}
    </article>
  );
}
