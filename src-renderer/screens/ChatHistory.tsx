// The kept conversations of the Chat screen: reopen one where it left off (its system prompt and version too), or
// delete it (its answers stay as turns, with their ratings).
import { useShallow } from 'zustand/shallow';
import { timeAgo } from '../components/format.ts';
import { useNow } from '../components/useNow.ts';
import { useRein } from '../store/react.tsx';

export function ChatHistory() {
  const s = useRein(useShallow((st) => ({ chats: st.chats, open: st.openChat, remove: st.deleteChat, current: st.chatSession, busy: st.chatBusy })));
  const now = useNow();
  if (s.chats.length === 0) return null;
  return (
    <details className="chat-history">
      <summary>
        Conversations <span className="muted">({s.chats.length})</span>
      </summary>
      <ul aria-label="Conversations">
        {s.chats.map((c) => (
          <li key={c.id} className={c.id === s.current ? 'current' : undefined}>
            <button type="button" className="link" onClick={() => void s.open(c.id)} disabled={s.busy} aria-current={c.id === s.current ? 'true' : undefined}>
              {c.title}
            </button>
            <span className="muted small">
              {c.count} {c.count === 1 ? 'message' : 'messages'} · {timeAgo(c.updatedAt, now)}
            </span>
            <button type="button" className="secondary small-button" onClick={() => void s.remove(c.id)} disabled={s.busy} aria-label={`Delete conversation: ${c.title}`}>
              Delete
            </button>
          </li>
        ))}
      </ul>
    </details>
  );
}
