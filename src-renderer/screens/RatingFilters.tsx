import { useEffect, useState } from 'react';
import { useShallow } from 'zustand/shallow';
import { sourceName } from '../components/format.ts';
import { useRein } from '../store/react.tsx';
import type { RatingFilters } from '../store/types.ts';

// One shared empty list: a new [] per call would make useShallow see a change on every render.
const NO_AGENTS: string[] = [];

export function RatingFiltersBar() {
  const { filters, setFilters, agents, tags, loadTags, total } = useRein(
    useShallow((s) => ({
      filters: s.ratingFilters,
      setFilters: s.setRatingFilters,
      agents: s.settings?.['capture.agents'] ?? NO_AGENTS,
      tags: s.tags,
      loadTags: s.loadTags,
      total: s.status?.ratings.total,
    })),
  );
  const [search, setSearch] = useState(filters.search);
  useEffect(() => {
    void loadTags();
  }, [loadTags, total]);
  // Search as you type, once the typing pauses.
  useEffect(() => {
    if (search === filters.search) return;
    const t = setTimeout(() => setFilters({ search }), 250);
    return () => clearTimeout(t);
  }, [search, filters.search, setFilters]);
  return (
    <div className="filters" role="search">
      <label className="field grow">
        <span>Search prompts, answers and comments</span>
        <input type="search" value={search} onChange={(e) => setSearch(e.target.value)} data-testid="ratings-search" />
      </label>
      <label className="field">
        <span>Agent</span>
        <select value={filters.source} onChange={(e) => setFilters({ source: e.target.value })}>
          <option value="any">All</option>
          {agents.map((a) => (
            <option key={a} value={a}>
              {sourceName(a)}
            </option>
          ))}
        </select>
      </label>
      <label className="field">
        <span>Rating</span>
        <select value={filters.kind} onChange={(e) => setFilters({ kind: e.target.value as RatingFilters['kind'] })}>
          <option value="any">All</option>
          <option value="good">Good</option>
          <option value="bad">Bad</option>
          <option value="scale">1-5 score</option>
        </select>
      </label>
      <label className="field">
        <span>Tag</span>
        <select value={filters.tag} onChange={(e) => setFilters({ tag: e.target.value })} data-testid="tag-filter">
          <option value="">Any</option>
          {/* A tag chosen before its last rating went away stays selectable, so the filter never points at nothing. */}
          {filters.tag && !tags.some((t) => t.tag === filters.tag) && <option value={filters.tag}>{filters.tag}</option>}
          {tags.map((t) => (
            <option key={t.tag} value={t.tag}>
              {t.tag} ({t.count})
            </option>
          ))}
        </select>
      </label>
      <label className="field">
        <span>When</span>
        <select value={filters.days} onChange={(e) => setFilters({ days: Number(e.target.value) })}>
          <option value={0}>Any time</option>
          <option value={1}>Last 24 h</option>
          <option value={7}>Last 7 days</option>
          <option value={30}>Last 30 days</option>
        </select>
      </label>
      <label className="field">
        <span>Trained</span>
        <select value={filters.trained} onChange={(e) => setFilters({ trained: e.target.value as RatingFilters['trained'] })}>
          <option value="any">Either</option>
          <option value="yes">Trained</option>
          <option value="no">Not yet</option>
        </select>
      </label>
    </div>
  );
}
