// The dashboard's charts (recharts): the reward baseline (an EMA of rewards) over time, Good/Bad ratings per day, and a run's loss and KL
// per step on separate charts (issue #15 item 6). Every axis has a title with its unit, and every chart a text
// summary for screen readers (store/chart-words.ts). Colours come from the CSS variables, so light and dark follow
// the OS.
import { useState } from 'react';
import type { ReactNode } from 'react';
import { Bar, BarChart, CartesianGrid, Legend, Line, LineChart, ReferenceLine, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import type { EmaPoint } from '../../src-main/common/domain.ts';
import { curveSummary, emaSummary, percentGood, perDaySummary, timeTicks } from '../store/chart-words.ts';

const axis = { stroke: 'var(--muted)', fontSize: 12 };
const axisTitle = { fill: 'var(--muted)', fontSize: 12 };
const tooltip = { contentStyle: { background: 'var(--surface)', border: '1px solid var(--border)', color: 'var(--text)' } };
const margin = { top: 8, right: 16, bottom: 20, left: 8 };

/**
 * The chart itself is hidden from screen readers (aria-hidden, and recharts' keyboard layer off so nothing inside it
 * takes focus); this sentence says what it shows.
 */
function Summary(props: { id: string; text: string }) {
  return (
    <p className="sr-only" data-testid={props.id}>
      {props.text}
    </p>
  );
}

/**
 * The box a chart is drawn in, hidden from screen readers. Its tooltip shows only once the pointer has really moved
 * over it: Chromium sends a move event of zero distance when a chart is laid out under a resting pointer (a screen
 * opened by a click there, a dialog closed, the window resized), and recharts took that for a hover and left a
 * tooltip up that the person never asked for. `tip` goes to the chart's Tooltip as `active`: false hides it,
 * undefined leaves it to recharts.
 */
export function ChartBox(props: { children: (tip: false | undefined) => ReactNode }) {
  const [moved, setMoved] = useState(false);
  return (
    <div
      aria-hidden="true"
      onPointerMove={(e) => {
        if (e.movementX !== 0 || e.movementY !== 0) setMoved(true);
      }}
      onPointerLeave={() => setMoved(false)}
    >
      {props.children(moved ? undefined : false)}
    </div>
  );
}

export function EmaChart(props: { points: EmaPoint[] }) {
  const data = props.points.map((p) => ({ at: p.at, value: p.value }));
  const { ticks, format } = timeTicks(data[0]?.at ?? 0, data[data.length - 1]?.at ?? 0);
  return (
    <figure className="chart" data-testid="ema-chart">
      <ChartBox>
        {(tip) => (
          <ResponsiveContainer width="100%" height={220}>
            <LineChart data={data} margin={margin} accessibilityLayer={false}>
              <CartesianGrid stroke="var(--border)" strokeDasharray="3 3" />
              <XAxis dataKey="at" type="number" scale="time" domain={['dataMin', 'dataMax']} ticks={ticks} tickFormatter={format} {...axis} label={{ value: 'Time of rating', position: 'insideBottom', offset: -12, ...axisTitle }} />
              <YAxis domain={[-1, 1]} {...axis} label={{ value: 'Reward baseline', angle: -90, position: 'insideLeft', offset: 4, style: { textAnchor: 'middle' }, ...axisTitle }} />
              <Tooltip active={tip} {...tooltip} labelFormatter={(t) => new Date(Number(t)).toLocaleString()} formatter={(v) => Number(v).toFixed(3)} />
              <Line type="stepAfter" dataKey="value" name="Reward baseline" stroke="var(--accent)" dot={false} strokeWidth={2} isAnimationActive={false} />
            </LineChart>
          </ResponsiveContainer>
        )}
      </ChartBox>
      <Summary id="ema-summary" text={`Reward baseline (the running EMA of rewards) over time. ${emaSummary(props.points)}`} />
    </figure>
  );
}

export function PerDayChart(props: { days: { day: string; good: number; bad: number }[] }) {
  const latest = props.days[props.days.length - 1];
  return (
    <figure className="chart" data-testid="days-chart">
      <ChartBox>
        {(tip) => (
          <ResponsiveContainer width="100%" height={220}>
            <BarChart data={props.days} margin={margin} accessibilityLayer={false}>
              <CartesianGrid stroke="var(--border)" strokeDasharray="3 3" />
              <XAxis dataKey="day" {...axis} label={{ value: 'Day', position: 'insideBottom', offset: -12, ...axisTitle }} />
              <YAxis allowDecimals={false} {...axis} label={{ value: 'Ratings', angle: -90, position: 'insideLeft', offset: 4, style: { textAnchor: 'middle' }, ...axisTitle }} />
              <Tooltip active={tip}
                {...tooltip}
                cursor={{ fill: 'var(--surface-2)' }}
                labelFormatter={(day, payload) => {
                  const d = payload[0]?.payload as { good: number; bad: number } | undefined;
                  return d ? `${String(day)} · ${percentGood(d.good, d.bad)}` : String(day);
                }}
              />
              {/* Good first, as everywhere else (the legend sorts by name by default). */}
              <Legend verticalAlign="top" height={28} itemSorter={null} />
              <Bar dataKey="good" name="Good" stackId="r" fill="var(--good)" isAnimationActive={false} />
              <Bar dataKey="bad" name="Bad" stackId="r" fill="var(--bad)" isAnimationActive={false} />
            </BarChart>
          </ResponsiveContainer>
        )}
      </ChartBox>
      {latest && (
        <p className="muted small" data-testid="days-latest">
          {latest.day}, {percentGood(latest.good, latest.bad)}.
        </p>
      )}
      <Summary id="days-summary" text={`Good and Bad ratings per day. ${perDaySummary(props.days)}`} />
    </figure>
  );
}

type Step = { step: number; loss: number; kl: number };

/** Reference lines of the KL chart: the gate's held-out measure and its budget, when known. */
export interface KlRefs {
  heldout?: number | null;
  budget?: number | null;
}

/**
 * A run's loss and KL, one chart each: they have different units and scales, and a shared chart needed two
 * unlabelled y-axes. The KL per step is measured on the round's own training batch; the gate's KL is measured on
 * held-out probe prompts, and its budget applies to that one only, so both are drawn as labelled lines, not merged.
 */
export function RunCurve(props: { steps: Step[]; height?: number; refs?: KlRefs }) {
  const height = props.height ?? 180;
  const heldout = props.refs?.heldout ?? null;
  const budget = props.refs?.budget ?? null;
  const refs = [
    ...(heldout !== null ? [{ name: 'Held-out KL (gate)', value: heldout }] : []),
    ...(budget !== null ? [{ name: "Gate's KL budget", value: budget }] : []),
  ];
  const xAxis = <XAxis dataKey="step" type="number" domain={['dataMin', 'dataMax']} allowDecimals={false} {...axis} label={{ value: 'Training step', position: 'insideBottom', offset: -12, ...axisTitle }} />;
  return (
    <div className="run-charts">
      <figure className="chart" data-testid="loss-chart">
        <figcaption className="small">Loss</figcaption>
        <ChartBox>
          {(tip) => (
            <ResponsiveContainer width="100%" height={height}>
              <LineChart data={props.steps} margin={margin} accessibilityLayer={false}>
                <CartesianGrid stroke="var(--border)" strokeDasharray="3 3" />
                {xAxis}
                <YAxis {...axis} label={{ value: 'Loss', angle: -90, position: 'insideLeft', offset: 4, style: { textAnchor: 'middle' }, ...axisTitle }} />
                <Tooltip active={tip} {...tooltip} labelFormatter={(s) => `Step ${String(s)}`} formatter={(v) => Number(v).toPrecision(3)} />
                <Line dataKey="loss" name="Loss" stroke="var(--accent)" dot={false} isAnimationActive={false} />
              </LineChart>
            </ResponsiveContainer>
          )}
        </ChartBox>
        <Summary id="loss-summary" text={curveSummary('Loss', props.steps.map((s) => ({ step: s.step, value: s.loss })))} />
      </figure>
      <figure className="chart" data-testid="kl-chart">
        <figcaption className="small">How far the model moved (KL)</figcaption>
        <ChartBox>
          {(tip) => (
            <ResponsiveContainer width="100%" height={height}>
              <LineChart data={props.steps} margin={margin} accessibilityLayer={false}>
                <CartesianGrid stroke="var(--border)" strokeDasharray="3 3" />
                {xAxis}
                <YAxis {...axis} domain={[0, 'auto']} tickFormatter={(v: number) => Number(v.toPrecision(2)).toString()} label={{ value: 'KL (nats)', angle: -90, position: 'insideLeft', offset: 4, style: { textAnchor: 'middle' }, ...axisTitle }} />
                <Tooltip active={tip} {...tooltip} labelFormatter={(s) => `Step ${String(s)}`} formatter={(v) => Number(v).toPrecision(3)} />
                <Line dataKey="kl" name="Training-batch KL" stroke="var(--bad)" dot={false} isAnimationActive={false} />
                {heldout !== null && <ReferenceLine y={heldout} stroke="var(--good)" strokeDasharray="6 3" ifOverflow="extendDomain" />}
                {budget !== null && <ReferenceLine y={budget} stroke="var(--muted)" strokeDasharray="2 3" ifOverflow="extendDomain" />}
              </LineChart>
            </ResponsiveContainer>
          )}
        </ChartBox>
        <ul className="chart-legend small" data-testid="kl-legend">
          <li><span className="swatch line" style={{ borderColor: 'var(--bad)' }} />Training-batch KL</li>
          {heldout !== null && <li><span className="swatch dashed" style={{ borderColor: 'var(--good)' }} />Held-out KL (gate)</li>}
          {budget !== null && <li><span className="swatch dotted" style={{ borderColor: 'var(--muted)' }} />Gate's KL budget</li>}
        </ul>
        <p className="muted small">
          The training-batch KL is measured against the original model on the answers each step trains on, and jumps about. The check after the round measures KL
          once, from the version before this round to the new one, on the held-out ratings' answers, averaged per token; only that one must stay within the budget.
        </p>
        <Summary id="kl-summary" text={curveSummary('Training-batch KL', props.steps.map((s) => ({ step: s.step, value: s.kl })), refs)} />
      </figure>
    </div>
  );
}
