// The reward mapper's editor: the user's function is tried on their own recent ratings (testRewardMapper, run
// sandboxed in the core) and can be saved only once that try passed; the core tries it again on save and refuses a
// failing one, so the mapping in use stays until a working one replaces it.
import { useState } from 'react';
import { useShallow } from 'zustand/shallow';
import { useRein } from '../store/react.tsx';

const EXAMPLE = `(rating, turn) => {
  // rating: kind ('good' | 'bad' | 'scale'), score (1-5 or null), reward (the default), tags, comment, correction
  // turn: source ('claude-code', 'codex', …), length (characters in the answer), promptLength
  if (rating.tags.includes('style')) return rating.reward / 2;
  return rating.reward;
}`;

const fmt = (n: number) => (n > 0 ? '+' : n < 0 ? '−' : '') + Math.abs(n).toFixed(2);

export function RewardMapperField(props: { id: string; describedBy: string }) {
  const { saved, trial, error, tryMapper, save } = useRein(
    useShallow((s) => ({
      saved: s.settings?.['training.rewardMapper'] ?? null,
      trial: s.mapperTrial,
      error: s.mapperError,
      tryMapper: s.tryMapper,
      save: s.saveSettings,
    })),
  );
  const [draft, setDraft] = useState<string | null>(null);
  const source = draft ?? saved ?? EXAMPLE;
  const tried = trial !== null && trial.source === source;
  const changed = source !== (saved ?? '');
  return (
    <div className="mapper" data-testid="reward-mapper">
      <p className="small">
        In use: <strong data-testid="mapper-in-use">{saved ? 'your mapper' : 'the default (Good +1, Bad −1, a score s as (s−3)/2)'}</strong>
      </p>
      <textarea id={props.id} className="mono" rows={8} spellCheck={false} value={source} aria-describedby={props.describedBy} onChange={(e) => setDraft(e.target.value)} />
      <div className="mapper-actions">
        <button type="button" className="secondary" onClick={() => void tryMapper(source)}>
          Try on my recent ratings
        </button>
        <button type="button" className="primary" disabled={!tried || !changed} title={tried ? undefined : 'Try it first'} onClick={() => void save({ 'training.rewardMapper': source }).then((ok) => ok && setDraft(null))}>
          Save mapper
        </button>
        {saved && (
          <button type="button" className="secondary" onClick={() => void save({ 'training.rewardMapper': null }).then((ok) => ok && setDraft(null))}>
            Use the default mapping
          </button>
        )}
      </div>
      {!tried && !error && <p className="muted small">Try it first: Save works once it ran on your ratings without an error.</p>}
      {error && (
        <p className="error small" role="alert" data-testid="mapper-error">
          Refused: {error.replace(/\.$/, '')}. The mapping in use has not changed.
        </p>
      )}
      {tried && !error && (
        <div className="mapper-trial" data-testid="mapper-trial">
          <p className="small ok">
            Ran on your {trial.results.length} most recent rating{trial.results.length === 1 ? '' : 's'} without an error.
            {trial.results.length === 0 && ' Rate a few answers to see what it gives.'}
          </p>
          {trial.results.length > 0 && (
            <div className="table-scroll">
              <table className="small">
                <caption className="sr-only">What the mapper gives your recent ratings</caption>
                <thead>
                  <tr>
                    <th scope="col">Turn</th>
                    <th scope="col">Rating</th>
                    <th scope="col">Tags</th>
                    <th scope="col">Source</th>
                    <th scope="col">Default</th>
                    <th scope="col">Yours</th>
                  </tr>
                </thead>
                <tbody>
                  {trial.results.slice(0, 10).map((r) => (
                    <tr key={r.ratingId}>
                      <td>{r.turnId}</td>
                      <td>{r.kind === 'scale' ? `${r.score}/5` : r.kind === 'good' ? 'Good' : 'Bad'}</td>
                      <td>{r.tags.join(', ') || '—'}</td>
                      <td>{r.source}</td>
                      <td>{fmt(r.defaultReward)}</td>
                      <td>{fmt(r.reward)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </div>
      )}
    </div>
  );
}
