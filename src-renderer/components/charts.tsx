// The dashboard's charts (recharts): the reward baseline (an EMA of rewards) over time, good/bad ratings per day, and loss/KL per step of
// a run. Colours come from the CSS variables, so light and dark follow the OS.
import { Bar, BarChart, CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import type { EmaPoint } from '../../src-main/common/domain.ts';

const axis = { stroke: 'var(--muted)', fontSize: 12 };
const tooltip = { contentStyle: { background: 'var(--surface)', border: '1px solid var(--border)', color: 'var(--text)' } };
const DAY_MS = 86_400_000;
/** Tick labels for a time axis: clock times when the points span under two days, dates otherwise. */
export function timeTickFormatter(spanMs: number): (t: number) => string {
  if (spanMs < 2 * DAY_MS) return (t) => new Date(t).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
  return (t) => new Date(t).toLocaleDateString(undefined, { month: 'short', day: 'numeric' });
}

export function EmaChart(props: { points: EmaPoint[] }) {
  const data = props.points.map((p) => ({ at: p.at, value: p.value }));
  const span = data.length > 1 ? data[data.length - 1]!.at - data[0]!.at : 0;
  return (
    <ResponsiveContainer width="100%" height={200}>
      <LineChart data={data} margin={{ top: 8, right: 12, bottom: 0, left: -16 }}>
        <CartesianGrid stroke="var(--border)" strokeDasharray="3 3" />
        <XAxis dataKey="at" type="number" scale="time" domain={['dataMin', 'dataMax']} tickFormatter={timeTickFormatter(Math.abs(span))} {...axis} />
        <YAxis domain={[-1, 1]} {...axis} />
        <Tooltip {...tooltip} labelFormatter={(t) => new Date(Number(t)).toLocaleString()} formatter={(v) => Number(v).toFixed(3)} />
        <Line type="stepAfter" dataKey="value" name="reward baseline" stroke="var(--accent)" dot={false} strokeWidth={2} isAnimationActive={false} />
      </LineChart>
    </ResponsiveContainer>
  );
}

export function PerDayChart(props: { days: { day: string; good: number; bad: number }[] }) {
  return (
    <ResponsiveContainer width="100%" height={200}>
      <BarChart data={props.days} margin={{ top: 8, right: 12, bottom: 0, left: -16 }}>
        <CartesianGrid stroke="var(--border)" strokeDasharray="3 3" />
        <XAxis dataKey="day" {...axis} />
        <YAxis allowDecimals={false} {...axis} />
        <Tooltip {...tooltip} cursor={{ fill: 'var(--surface-2)' }} />
        <Legend />
        <Bar dataKey="good" name="Good" stackId="r" fill="var(--good)" isAnimationActive={false} />
        <Bar dataKey="bad" name="Bad" stackId="r" fill="var(--bad)" isAnimationActive={false} />
      </BarChart>
    </ResponsiveContainer>
  );
}

export function RunCurve(props: { steps: { step: number; loss: number; kl: number }[]; height?: number }) {
  return (
    <ResponsiveContainer width="100%" height={props.height ?? 160}>
      <LineChart data={props.steps} margin={{ top: 8, right: 12, bottom: 0, left: -16 }}>
        <CartesianGrid stroke="var(--border)" strokeDasharray="3 3" />
        <XAxis dataKey="step" type="number" domain={['dataMin', 'dataMax']} {...axis} />
        <YAxis yAxisId="loss" {...axis} />
        <YAxis yAxisId="kl" orientation="right" {...axis} />
        <Tooltip {...tooltip} formatter={(v) => Number(v).toPrecision(3)} />
        <Legend />
        <Line yAxisId="loss" dataKey="loss" name="loss" stroke="var(--accent)" dot={false} isAnimationActive={false} />
        <Line yAxisId="kl" dataKey="kl" name="KL" stroke="var(--bad)" dot={false} isAnimationActive={false} />
      </LineChart>
    </ResponsiveContainer>
  );
}
