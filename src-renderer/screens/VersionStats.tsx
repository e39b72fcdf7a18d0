// "Did it get better?": per version, its arena win rate against its parent and against the base (Wilson 95%
// interval, vote counts), and the Good-rate of the answers it produced in real use; then the same as a chart over the
// versions in the order they were made. A win rate counts decisive votes (ties and both-bad are listed beside it).
import { useEffect } from 'react';
import { useShallow } from 'zustand/shallow';
import { CartesianGrid, ErrorBar, Line, LineChart, ReferenceLine, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import type { HeadToHead, VersionStats as Stats } from '../../src-main/common/chat/arena.ts';
import type { RateEstimate } from '../../src-main/common/training/intervals.ts';
import { ChartBox } from '../components/charts.tsx';
import { useRein } from '../store/react.tsx';

const pct = (x: number) => `${Math.round(x * 100)}%`;
const vname = (v: number) => (v === 0 ? 'base' : `v${v}`);

function Rate(props: { r: RateEstimate; what: string; of?: string }) {
  if (props.r.n === 0) return <span className="muted">no {props.what} yet</span>;
  return (
    <span>
      <strong>{pct(props.r.rate)}</strong>{' '}
      <span className="muted small">
        [{pct(props.r.ci[0])}–{pct(props.r.ci[1])}]{props.of ? ` of ${props.r.n} ${props.of}` : ''}
      </span>
    </span>
  );
}

function Versus(props: { h: HeadToHead | null }) {
  const h = props.h;
  if (h === null) return <span className="muted">—</span>;
  if (h.votes === 0) return <span className="muted">no votes yet</span>;
  const rest = [h.ties > 0 ? `${h.ties} tied` : '', h.bothBad > 0 ? `${h.bothBad} both bad` : ''].filter(Boolean).join(', ');
  return (
    <span>
      <Rate r={h.winRate} what="decisive votes" />
      <br />
      <span className="muted small">
        {h.wins} won, {h.losses} lost{rest ? `, ${rest}` : ''}
      </span>
    </span>
  );
}

/** A chart point: the rate, and the distance to each end of its interval (recharts' ErrorBar takes [below, above]). */
const point = (r: RateEstimate | undefined) => (r === undefined || r.n === 0 ? { v: null, e: [0, 0] } : { v: r.rate, e: [r.rate - r.ci[0], r.ci[1] - r.rate] });

/** Two series that sit on each other at every version: one hides the other, so the legend says so. */
const same = (a: (number | null)[], b: (number | null)[]) => a.some((x) => x !== null) && a.every((x, i) => x === b[i]);

function BetterChart(props: { stats: Stats[] }) {
  // A rejected version never went live: it has no place on the line of versions that did.
  const shown = props.stats.filter((s) => s.status !== 'rejected');
  const data = shown.map((s) => {
    const p = point(s.vsParent?.winRate);
    const b = point(s.vsBase?.winRate);
    const g = point(s.goodRate);
    return { name: vname(s.version), parent: p.v, parentErr: p.e, base: b.v, baseErr: b.e, good: g.v, goodErr: g.e };
  });
  const axis = { stroke: 'var(--muted)', fontSize: 12 };
  const baseSameAsParent = same(data.map((d) => d.base), data.map((d) => d.parent));
  const summary = shown
    .filter((s) => s.version > 0)
    .map((s) => `${vname(s.version)}: ${s.vsParent && s.vsParent.winRate.n > 0 ? `wins ${pct(s.vsParent.winRate.rate)} against its parent` : 'no decisive votes against its parent'}; Good-rate ${s.goodRate.n > 0 ? pct(s.goodRate.rate) : 'not rated'}`)
    .join('. ');
  return (
    <figure className="chart" data-testid="better-chart">
      {/* Laid out at the width it has (not scaled from a fixed drawing), so its text stays 12 px at any width. */}
      <ChartBox>
        {(tip) => (
          <ResponsiveContainer width="100%" height={240}>
          <LineChart data={data} margin={{ top: 8, right: 16, bottom: 20, left: 8 }} accessibilityLayer={false}>
              <CartesianGrid stroke="var(--border)" strokeDasharray="3 3" />
              <XAxis dataKey="name" {...axis} label={{ value: 'Version (oldest first)', position: 'insideBottom', offset: -12, fill: 'var(--muted)', fontSize: 12 }} />
              <YAxis domain={[0, 1]} tickFormatter={pct} {...axis} />
              <ReferenceLine y={0.5} stroke="var(--muted)" strokeDasharray="4 4" label={{ value: 'no better', position: 'insideTopLeft', fill: 'var(--muted)', fontSize: 12 }} />
              <Tooltip active={tip} contentStyle={{ background: 'var(--surface)', border: '1px solid var(--border)', color: 'var(--text)' }} formatter={(v) => (v === null ? '—' : pct(Number(v)))} />
              <Line dataKey="parent" name="Win rate vs parent" stroke="var(--accent)" strokeWidth={2} connectNulls isAnimationActive={false}>
                <ErrorBar dataKey="parentErr" width={4} stroke="var(--accent)" />
              </Line>
              <Line dataKey="base" name="Win rate vs base" stroke="var(--good)" strokeDasharray="5 3" strokeWidth={2} connectNulls isAnimationActive={false}>
                <ErrorBar dataKey="baseErr" width={4} stroke="var(--good)" />
              </Line>
              <Line dataKey="good" name="Good-rate in use" stroke="var(--bad)" strokeWidth={2} connectNulls isAnimationActive={false}>
                <ErrorBar dataKey="goodErr" width={4} stroke="var(--bad)" />
              </Line>
          </LineChart>
          </ResponsiveContainer>
        )}
      </ChartBox>
      {/* An HTML legend that wraps at any width (recharts' own kept its first width when the window narrowed). */}
      <ul className="chart-legend small" data-testid="better-legend">
        <li><span className="swatch line" style={{ borderColor: 'var(--accent)' }} />Win rate vs parent</li>
        <li>
          <span className="swatch dashed" style={{ borderColor: 'var(--good)' }} />
          Win rate vs base{baseSameAsParent && ' (the same as vs parent: its parent is the base, so the lines coincide)'}
        </li>
        <li><span className="swatch line" style={{ borderColor: 'var(--bad)' }} />Good-rate in use</li>
      </ul>
      {shown.length < props.stats.length && <p className="muted small">Rejected versions are left out: they were never used.</p>}
      <p className="sr-only">Did it get better? {summary}</p>
    </figure>
  );
}

export function VersionStatsPanel() {
  const { stats, error, load, adapters } = useRein(useShallow((s) => ({ stats: s.versionStats, error: s.versionStatsError, load: s.loadVersionStats, adapters: s.adapters })));
  useEffect(() => {
    void load();
  }, [load, adapters]);
  const anyVotes = stats.some((s) => (s.vsParent?.votes ?? 0) > 0 || (s.vsBase?.votes ?? 0) > 0);
  return (
    <section className="panel" aria-labelledby="better-title" data-testid="version-stats">
      <h2 id="better-title">Did it get better?</h2>
      <p className="muted small">
        Win rate: the share of blind Arena votes a version won against the other (ties and “both bad” left out), with its 95% interval. Good-rate: the share of
        its answers you rated Good while using it. {anyVotes ? '' : 'No Arena votes yet: compare two versions in the Arena.'}
      </p>
      {error && <p className="error" role="alert">{error.message}</p>}
      <div className="table-scroll">
        <table className="stats-table">
          <thead>
            <tr>
              <th scope="col">Version</th>
              <th scope="col">vs parent</th>
              <th scope="col">vs base</th>
              <th scope="col">Good-rate in use</th>
              {/* The reward model's held-out reward per version (issue #14 item 3) goes in a column here. */}
            </tr>
          </thead>
          <tbody>
            {[...stats].reverse().map((s) => (
              <tr key={s.version} data-testid={`stats-v${s.version}`}>
                <th scope="row">
                  {vname(s.version)}
                  {s.status === 'active' && <span className="badge">active</span>}
                  {s.vsParent && s.vsParent.opponent !== 0 && <span className="muted small"> (parent {vname(s.vsParent.opponent)})</span>}
                </th>
                <td>
                  <Versus h={s.vsParent} />
                </td>
                <td>
                  <Versus h={s.vsBase} />
                </td>
                <td>
                  <Rate r={s.goodRate} what="rated answers" of="rated" />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {stats.length > 1 && <BetterChart stats={stats} />}
    </section>
  );
}
