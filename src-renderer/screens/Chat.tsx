// Chat with your local model: pick the version (the active one by default, any version, or the base), set a system
// prompt, and rate each answer where it stands. Every answer is stored as a turn with its tokens and μ, so a rating
// here trains the model like a rating of an agent's turn.
import { useEffect, useRef, useState } from 'react';
import { useShallow } from 'zustand/shallow';
import { useRein } from '../store/react.tsx';
import { ChatAnswer } from './ChatAnswer.tsx';
import { ChatHistory } from './ChatHistory.tsx';
import { VersionPicker } from './VersionPicker.tsx';

export function Chat() {
  const s = useRein(
    useShallow((st) => ({
      chat: st.chat,
      system: st.chatSystem,
      version: st.chatVersion,
      busy: st.chatBusy,
      error: st.chatError,
      send: st.sendChat,
      setSystem: st.setChatSystem,
      setVersion: st.setChatVersion,
      newChat: st.newChat,
      loadAdapters: st.loadAdapters,
      loadChats: st.loadChats,
      configured: st.status?.model.configured,
    })),
  );
  const [draft, setDraft] = useState('');
  const [showSystem, setShowSystem] = useState(s.system !== '');
  const end = useRef<HTMLDivElement>(null);
  const { loadAdapters, loadChats } = s;
  useEffect(() => {
    void loadAdapters();
    void loadChats();
  }, [loadAdapters, loadChats]);
  // A reopened conversation with a system prompt shows it.
  useEffect(() => {
    if (s.system !== '') setShowSystem(true);
  }, [s.system]);
  const last = s.chat[s.chat.length - 1]?.content;
  useEffect(() => {
    end.current?.scrollIntoView?.({ block: 'end' });
  }, [s.chat.length, last]);
  const submit = () => {
    if (draft.trim() === '' || s.busy) return;
    void s.send(draft);
    setDraft('');
  };
  return (
    <div className="screen chat-screen">
      <section className="panel" aria-labelledby="chat-title">
        <div className="panel-row">
          <h2 id="chat-title">Chat</h2>
          <div className="chat-tools">
            <VersionPicker id="chat-version" label="Answers from" value={s.version} onChange={s.setVersion} disabled={s.busy} />
            <button type="button" className="secondary" onClick={() => setShowSystem(!showSystem)} aria-expanded={showSystem}>
              System prompt
            </button>
            <button type="button" className="secondary" onClick={s.newChat} disabled={s.busy || s.chat.length === 0}>
              New chat
            </button>
          </div>
        </div>
        <ChatHistory />
        {showSystem && (
          <label className="field" htmlFor="chat-system">
            <span className="label">System prompt (sent first, with every message)</span>
            <textarea id="chat-system" rows={2} value={s.system} placeholder="e.g. You are a concise coding assistant." onChange={(e) => s.setSystem(e.target.value)} />
          </label>
        )}
        {s.configured === false && <p className="muted">No model is set up yet: choose one in Setup first.</p>}
        {s.chat.length === 0 ? (
          <p className="muted chat-empty">
            Ask your local model anything. Answers stream in; rate each one (Good, Bad, 1–5, or correct it) and it counts toward the next training round.
          </p>
        ) : (
          <div className="chat-log" data-testid="chat-log" aria-live="polite">
            {s.chat.map((e, i) =>
              e.role === 'user' ? (
                <div key={i} className="chat-msg user" data-testid="chat-question">
                  <p>{e.content}</p>
                </div>
              ) : (
                <ChatAnswer key={i} entry={e} />
              ),
            )}
            <div ref={end} />
          </div>
        )}
        {s.error && (
          <p className="error" role="alert">
            {s.error.message}
          </p>
        )}
        <form
          className="chat-input"
          onSubmit={(e) => {
            e.preventDefault();
            submit();
          }}
        >
          <label className="sr-only" htmlFor="chat-message">
            Message
          </label>
          <textarea
            id="chat-message"
            rows={2}
            value={draft}
            placeholder="Message your model (Enter sends, Shift+Enter for a new line)"
            onChange={(e) => setDraft(e.target.value)}
            onKeyDown={(e) => {
              if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) {
                e.preventDefault();
                submit();
              }
            }}
          />
          <button type="submit" className="primary" disabled={s.busy || draft.trim() === ''}>
            {s.busy ? 'Answering…' : 'Send'}
          </button>
        </form>
      </section>
    </div>
  );
}
