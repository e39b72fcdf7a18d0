// Blind A/B: one prompt to two versions, the answers side by side as A and B in an order the core drew at random,
// nothing saying which is which until the vote. The vote is stored as a pair with both answers; each side is rated
// (the better one Good, the other Bad; both Bad when both are; a tie rates neither) and trains the next round.
import { useEffect, useState } from 'react';
import { useShallow } from 'zustand/shallow';
import type { ArenaVote } from '../../src-main/common/chat/arena.ts';
import { Markdown } from '../components/Markdown.tsx';
import { useRein } from '../store/react.tsx';
import { VersionPicker } from './VersionPicker.tsx';

const name = (v: number | null) => (v === null ? '?' : v === 0 ? 'the base' : `v${v}`);
const VOTES: { vote: ArenaVote; label: string }[] = [
  { vote: 'a', label: 'A is better' },
  { vote: 'b', label: 'B is better' },
  { vote: 'tie', label: 'Tie' },
  { vote: 'bad', label: 'Both bad' },
];
const VOTED: Record<ArenaVote, string> = { a: 'You preferred A.', b: 'You preferred B.', tie: 'You called it a tie.', bad: 'You found both bad.' };

export function Arena() {
  const s = useRein(
    useShallow((st) => ({
      pair: st.arenaPair,
      match: st.arenaMatch,
      stream: st.arenaStream,
      busy: st.arenaBusy,
      error: st.arenaError,
      voted: st.arenaVoted,
      setPair: st.setArenaPair,
      start: st.startArena,
      vote: st.voteArena,
      loadAdapters: st.loadAdapters,
      active: st.adapters.find((a) => a.status === 'active') ?? null,
      setView: st.setView,
    })),
  );
  const [prompt, setPrompt] = useState('');
  const { loadAdapters } = s;
  useEffect(() => {
    void loadAdapters();
  }, [loadAdapters]);
  const defaultPair = s.active === null ? 'Train a first version to compare it with the base.' : `The active version (v${s.active.version}) against ${name(s.active.parentVersion ?? 0)}.`;
  const text = (side: 'a' | 'b') => s.match?.[side].text ?? s.stream[side];
  const shown = s.match !== null || s.stream.a !== '' || s.busy;
  return (
    <div className="screen arena-screen">
      <section className="panel" aria-labelledby="arena-title">
        <div className="panel-row">
          <h2 id="arena-title">Arena</h2>
          <div className="segmented" role="group" aria-label="Which versions">
            <button type="button" aria-pressed={s.pair === null} onClick={() => s.setPair(null)} disabled={s.busy}>
              Active vs parent
            </button>
            <button type="button" aria-pressed={s.pair !== null} onClick={() => s.setPair(s.pair ?? [s.active?.version ?? 0, 0])} disabled={s.busy}>
              Pick two
            </button>
          </div>
        </div>
        <p className="muted small">
          One prompt, two versions, shown as A and B in random order. Vote for the better answer before you learn which is which.{' '}
          {s.pair === null ? defaultPair : ''}
        </p>
        {s.pair !== null && (
          <div className="arena-pair">
            <VersionPicker id="arena-first" label="Compare" allowActive={false} value={s.pair[0]} onChange={(v) => s.setPair([v ?? 0, s.pair![1]])} disabled={s.busy} />
            <VersionPicker id="arena-second" label="with" allowActive={false} value={s.pair[1]} onChange={(v) => s.setPair([s.pair![0], v ?? 0])} disabled={s.busy} />
          </div>
        )}
        <form
          className="chat-input"
          onSubmit={(e) => {
            e.preventDefault();
            void s.start(prompt);
          }}
        >
          <label className="sr-only" htmlFor="arena-prompt">
            Prompt
          </label>
          <textarea id="arena-prompt" rows={2} value={prompt} placeholder="A prompt for both versions" onChange={(e) => setPrompt(e.target.value)} />
          <button type="submit" className="primary" disabled={s.busy || prompt.trim() === ''}>
            {s.busy && s.match === null ? 'Answering…' : 'Ask both'}
          </button>
        </form>
        {s.error && (
          <p className="error" role="alert">
            {s.error.message}
          </p>
        )}
      </section>
      {shown && (
        <section className="panel" aria-label="The two answers">
          <div className="arena-sides">
            {(['a', 'b'] as const).map((side) => (
              <article key={side} className="arena-side" data-testid={`arena-${side}`}>
                <h3>
                  Answer {side.toUpperCase()}
                  {s.voted && <span className="muted small"> · {name(s.match![side].version)}</span>}
                </h3>
                {text(side) === '' ? <p className="muted">{s.busy ? (side === 'b' && s.stream.a !== '' ? 'Waiting for A to finish…' : 'Answering…') : ''}</p> : <Markdown text={text(side)} />}
              </article>
            ))}
          </div>
          {s.match !== null && (
            <div className="actions arena-votes" role="group" aria-label="Your vote">
              {VOTES.map((v) => (
                <button key={v.vote} type="button" className={v.vote === 'a' || v.vote === 'b' ? 'primary' : 'secondary'} aria-pressed={s.match?.vote === v.vote} disabled={s.busy || s.voted !== null} onClick={() => void s.vote(v.vote)}>
                  {v.label}
                </button>
              ))}
            </div>
          )}
          {s.voted && (
            <p role="status" data-testid="arena-result">
              {VOTED[s.voted.match.vote!]} A was <strong>{name(s.voted.match.a.version)}</strong>, B was <strong>{name(s.voted.match.b.version)}</strong>.{' '}
              {s.voted.ratings.length > 0 ? `Both answers were rated (${s.voted.ratings.length} ratings) and train the next round.` : 'A tie rates neither answer.'}{' '}
              <button type="button" className="link" onClick={() => s.setView('versions')}>
                See win rates
              </button>
            </p>
          )}
        </section>
      )}
    </div>
  );
}
