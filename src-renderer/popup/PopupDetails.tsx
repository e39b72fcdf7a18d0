import { useEffect, useState } from 'react';
import { useRein } from '../store/react.tsx';

/** The optional part of a rating: a 1-5 score instead of Good/Bad, a corrected answer, and tags. */
export function PopupDetails(props: { turnId: number; onDraft: (typed: boolean) => void }) {
  const ratePopup = useRein((s) => s.ratePopup);
  const [scale, setScale] = useState<number | null>(null);
  const [correction, setCorrection] = useState('');
  const [tags, setTags] = useState('');
  const typed = correction.trim() !== '' || tags.trim() !== '';
  const { onDraft } = props;
  useEffect(() => onDraft(typed), [typed, onDraft]);
  const tagList = [...new Set(tags.split(',').map((t) => t.trim()).filter((t) => t.length > 0))];
  const submit = (value: 'good' | 'bad' | number) =>
    void ratePopup(props.turnId, {
      value,
      ...(correction.trim() ? { correction: correction.trim() } : {}),
      ...(tagList.length > 0 ? { tags: tagList.slice(0, 32) } : {}),
    });
  return (
    <form
      className="popup-details"
      onSubmit={(e) => {
        e.preventDefault();
        if (scale !== null) submit(scale);
      }}
    >
      <fieldset className="scale">
        <legend>Score (1 = useless, 5 = exactly right)</legend>
        {[1, 2, 3, 4, 5].map((n) => (
          <label key={n} className="scale-option">
            <input type="radio" name="scale" value={n} checked={scale === n} onChange={() => setScale(n)} />
            {n}
          </label>
        ))}
      </fieldset>
      <label className="field">
        <span>Better answer (optional): trained as the answer you wanted</span>
        <textarea rows={3} value={correction} onChange={(e) => setCorrection(e.target.value)} />
      </label>
      <label className="field">
        <span>Tags, comma-separated (optional)</span>
        <input type="text" value={tags} onChange={(e) => setTags(e.target.value)} placeholder="e.g. too long, wrong file" />
      </label>
      <div className="detail-actions">
        <button type="button" className="secondary" onClick={() => submit('good')}>
          Save as Good
        </button>
        <button type="button" className="secondary" onClick={() => submit('bad')}>
          Save as Bad
        </button>
        <button type="submit" className="primary" disabled={scale === null}>
          {scale === null ? 'Save score' : `Save score ${scale}`}
        </button>
      </div>
    </form>
  );
}
