// The optional part of a rating: a 1-5 score instead of Good/Bad, a better answer, tags and a comment. What is typed
// here is the turn's draft in the store, so it goes with whichever rating is given: these score buttons, the big
// Good/Bad, or the keys 1/2.
import { useShallow } from 'zustand/shallow';
import { useRein } from '../store/react.tsx';
import { selectDraft } from '../store/rating.ts';
import type { RateValue, RatingSurface } from '../store/types.ts';

const SCORES = [1, 2, 3, 4, 5] as const;

export function RatingDetails(props: { turnId: number; where: RatingSurface; scale: number | null; answer?: string | undefined }) {
  const { turnId, where, answer } = props;
  const { draft, setDraft, rate, busy } = useRein(
    useShallow((s) => ({ draft: selectDraft(turnId)(s), setDraft: s.setDraft, rate: s.rate, busy: s.ratingTurnId !== null })),
  );
  const score = (n: RateValue) => void rate(turnId, n, where);
  return (
    <div className="rating-details">
      <div className="scale-row" role="group" aria-label="Score 1 to 5 (1 = useless, 5 = exactly right), saved at once">
        <span className="muted small" aria-hidden="true">
          Score (1 = useless, 5 = exactly right)
        </span>
        {SCORES.map((n) => (
          <button key={n} type="button" className="score" aria-label={`Score ${n} of 5`} aria-pressed={props.scale === n} disabled={busy} onClick={() => score(n)}>
            {n}
          </button>
        ))}
      </div>
      <label className="field">
        <span>Better answer (optional): trained as the answer you wanted</span>
        <textarea rows={3} value={draft.correction} onChange={(e) => setDraft(turnId, { correction: e.target.value })} />
      </label>
      {answer !== undefined && draft.correction === '' && (
        <button type="button" className="link" onClick={() => setDraft(turnId, { correction: answer })}>
          Start from the answer
        </button>
      )}
      <label className="field">
        <span>Tags, comma-separated (optional)</span>
        <input type="text" value={draft.tags} onChange={(e) => setDraft(turnId, { tags: e.target.value })} placeholder="e.g. too long, wrong file" />
      </label>
      <label className="field">
        <span>Comment (optional)</span>
        <input type="text" value={draft.comment} onChange={(e) => setDraft(turnId, { comment: e.target.value })} />
      </label>
      <p className="muted small">Saved with the rating you give: Good, Bad or a score.</p>
    </div>
  );
}
