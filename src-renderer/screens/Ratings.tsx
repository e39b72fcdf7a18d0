// Ratings history: search and filters (agent, rating, date, trained or not), one page at a time; open a turn with its
// full context, re-rate it, delete the rating or the turn, and export everything to a JSONL file.
import { useEffect, useState } from 'react';
import { useShallow } from 'zustand/shallow';
import { sourceName } from '../components/format.ts';
import { useRein } from '../store/react.tsx';
import { PARKED_ADVICE, ratingLabel, ratingRoundText, selectRatingPages, selectRatingRows } from '../store/ratings.ts';
import { firstLines } from '../store/turns.ts';
import { RatingFiltersBar } from './RatingFilters.tsx';
import { TurnDetail } from './TurnDetail.tsx';

/**
 * A turn opens in place, under its row. Opening one row closes the one above it, which moves the clicked row up by
 * that detail's height, perhaps out of sight: then the row is scrolled back to the top of the window.
 */
function useKeepOpenRowInView(openId: number | null) {
  useEffect(() => {
    if (openId === null) return;
    const row = document.querySelector(`[data-testid=rating-rows] > li[data-turn-id="${openId}"]`);
    const top = row?.getBoundingClientRect().top;
    if (row && top !== undefined && (top < 0 || top > window.innerHeight * 0.6)) row.scrollIntoView({ block: 'start' });
  }, [openId]);
}

export function Ratings() {
  const { rows, pages, load, setPage, open, openId, error, loaded, exportRatings, exported, exportError, exporting, home } = useRein(
    useShallow((s) => ({
      rows: selectRatingRows(s),
      pages: selectRatingPages(s),
      load: s.loadRatings,
      setPage: s.setRatingPage,
      open: s.openTurn,
      openId: s.openTurnId,
      error: s.ratingsError,
      loaded: s.ratingsLoaded,
      exportRatings: s.exportRatings,
      exported: s.exportResult,
      exportError: s.exportError,
      exporting: s.exporting,
      home: s.status?.home ?? null,
    })),
  );
  const total = useRein((s) => s.status?.ratings.total);
  const parked = useRein((s) => s.status?.parked ?? 0);
  const [exportPath, setExportPath] = useState('');
  useEffect(() => {
    void load();
  }, [load, total]);
  useKeepOpenRowInView(openId);
  return (
    <div className="screen ratings-screen">
      <section className="panel" aria-labelledby="ratings-title">
        <div className="panel-row">
          <h2 id="ratings-title">Your ratings</h2>
          <span className="muted" data-testid="ratings-total">{pages.total} found</span>
        </div>
        <RatingFiltersBar />
        {parked > 0 && (
          <p className="parked-note small" data-testid="parked-note">
            {parked} {parked === 1 ? 'rating is' : 'ratings are'} parked: a round could not encode {parked === 1 ? 'its answer' : 'their answers'}, so {parked === 1 ? 'it does' : 'they do'} not count toward the next round. Each says why below. {PARKED_ADVICE}
          </p>
        )}
        {error && <p className="error" role="alert">{error.message}</p>}
        {loaded && rows.length === 0 ? (
          <p className="muted">No ratings match.</p>
        ) : (
          <ol className="turns rating-rows" data-testid="rating-rows">
            {rows.map(({ rating, turn }) => (
              <li key={rating.id} className={`turn${openId === rating.turnId ? ' selected' : ''}`} data-rating-id={rating.id} data-turn-id={rating.turnId}>
                <span className={`badge ${rating.kind}`}>{ratingLabel(rating)}</span>
                <button type="button" className="turn-text row-button" onClick={() => void open(rating.turnId)}>
                  <span className="turn-prompt">{turn ? firstLines(turn.prompt, 1, 160).text || '(empty prompt)' : `turn ${rating.turnId}`}</span>
                  <span className="turn-meta">
                    {turn ? sourceName(turn.source) : '…'} · {new Date(rating.createdAt).toLocaleString()} · {ratingRoundText(rating)}
                    {rating.tags.length > 0 && ` · ${rating.tags.join(', ')}`}
                  </span>
                  {rating.comment && (
                    <span className="turn-comment" dir="auto" data-testid="rating-comment">
                      “{firstLines(rating.comment, 1, 160).text}”
                    </span>
                  )}
                  {rating.parked !== null && (
                    <span className="turn-parked" data-testid="rating-parked">
                      Parked: {rating.parked}
                    </span>
                  )}
                </button>
                {openId === rating.turnId && <TurnDetail />}
              </li>
            ))}
          </ol>
        )}
        {pages.pages > 1 && (
          <div className="pager">
            <button type="button" className="secondary" disabled={pages.page === 0} onClick={() => setPage(pages.page - 1)}>
              Newer
            </button>
            <span className="muted">
              Page {pages.page + 1} of {pages.pages}
            </span>
            <button type="button" className="secondary" disabled={pages.page + 1 >= pages.pages} onClick={() => setPage(pages.page + 1)}>
              Older
            </button>
          </div>
        )}
      </section>
      {openId !== null && !rows.some((r) => r.rating.turnId === openId) && <TurnDetail />}
      <section className="panel" aria-labelledby="export-title">
        <h2 id="export-title">Export</h2>
        <form
          className="export-row"
          onSubmit={(e) => {
            e.preventDefault();
            void exportRatings(exportPath.trim() || `${home ?? '.'}/export-${new Date().toISOString().slice(0, 10)}.jsonl`);
          }}
        >
          <label className="field grow">
            <span>File, a full path (JSONL; empty: a dated file in {home ?? 'the Rein home'})</span>
            <input
              type="text"
              value={exportPath}
              onChange={(e) => setExportPath(e.target.value)}
              placeholder="/path/to/ratings.jsonl"
              aria-invalid={exportError !== null || undefined}
              aria-describedby={exportError ? 'export-error' : undefined}
            />
          </label>
          <button type="submit" className="secondary" disabled={exporting}>
            {exporting ? 'Exporting…' : 'Export turns and ratings'}
          </button>
        </form>
        {exportError && (
          <p className="error small" role="alert" id="export-error" data-testid="export-error">
            Not exported: {exportError.message.replace(/^exportData: /, '')}
          </p>
        )}
        {exported && (
          <p className="small" role="status" data-testid="export-result">
            Wrote {exported.turns} turns and {exported.ratings} ratings to <code className="path">{exported.path}</code>.
          </p>
        )}
      </section>
    </div>
  );
}
