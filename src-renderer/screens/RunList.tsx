import { useState } from 'react';
import type { RunView } from '../../src-main/common/domain.ts';
import { RunCurve } from '../components/charts.tsx';
import { DeviceLine } from '../components/DeviceLine.tsx';
import { useRein } from '../store/react.tsx';
import { fmtSmall, gateSentence, policySentence, rejectionWords, runMetrics, selectRuns, stoppedSentence, weakSentence } from '../store/training.ts';

/** The KL budget a round ran with (its stored config), for a round the gate never scored. */
function configBudget(run: RunView): number | null {
  const c = run.config as { klBudget?: unknown } | null;
  return typeof c?.klBudget === 'number' ? c.klBudget : null;
}

/**
 * The gate's held-out KL against its budget, on its own scale: beside the training-batch KL (which can run into the
 * thousands) the budget line sat flat at 0. Bars are on a log scale, so 0.001 and 10 both read.
 */
function GateKl(props: { kl: number; budget: number }) {
  const { kl, budget } = props;
  const lo = Math.log10(Math.max(1e-6, Math.min(kl > 0 ? kl : budget, budget) / 10));
  const hi = Math.log10(Math.max(kl, budget) * 2);
  const width = (x: number) => `${Math.max(2, ((Math.log10(Math.max(x, 1e-6)) - lo) / (hi - lo)) * 100).toFixed(1)}%`;
  const over = kl > budget;
  const times = budget > 0 ? kl / budget : Infinity;
  return (
    <figure className="gate-kl" data-testid="gate-kl">
      <figcaption className="small">
        Held-out KL {fmtSmall(kl)}/token against a budget of {fmtSmall(budget)}:{' '}
        {over ? <strong>{times >= 10 ? Math.round(times) : times.toFixed(1)}× the budget</strong> : 'within it'}.
      </figcaption>
      <div className="gate-kl-row" aria-hidden="true">
        <span>Held-out KL</span>
        <span className="gate-kl-track">
          <span className={`gate-kl-bar ${over ? 'over' : 'within'}`} style={{ width: width(kl) }} />
        </span>
      </div>
      <div className="gate-kl-row" aria-hidden="true">
        <span>Budget</span>
        <span className="gate-kl-track">
          <span className="gate-kl-bar budget" style={{ width: width(budget) }} />
        </span>
      </div>
      <p className="muted small">Log scale: each step of the scale is ten times the one before.</p>
    </figure>
  );
}

function RunItem(props: { run: RunView; accepted: boolean | null }) {
  const { run } = props;
  const [open, setOpen] = useState(false);
  const m = runMetrics(run);
  const gate = gateSentence(m.gate, props.accepted);
  const rejected = rejectionWords(m.gate, props.accepted);
  const when = new Date(run.startedAt ?? run.createdAt).toLocaleString();
  const weak = weakSentence(m.weak);
  const policy = policySentence(m.samples);
  const stopped = stoppedSentence(m.stoppedEarly);
  return (
    <li className="run" data-run-id={run.id}>
      <div className="run-head">
        {/* A round that finished but whose version the gate turned down reads as rejected, not "succeeded". */}
        <span className={`badge run-${props.accepted === false ? 'failed' : run.status}`}>{props.accepted === false ? 'rejected' : run.status}</span>
        <span className="run-title">
          Round {run.id} · {run.trigger} · {when}
          {run.adapterVersion !== null && (props.accepted === false ? ` · v${run.adapterVersion} not used` : ` → v${run.adapterVersion}`)}
        </span>
        {m.steps && m.steps.length > 1 && (
          <button type="button" className="link" aria-expanded={open} onClick={() => setOpen(!open)}>
            {open ? 'Hide curve' : 'Curve'}
          </button>
        )}
      </div>
      {rejected && (
        <p className="run-rejected" data-testid="run-rejected">
          {rejected.why} {rejected.next}
        </p>
      )}
      <p className="run-detail" data-testid="run-gate">
        {run.error ?? gate ?? (run.status === 'running' ? 'Running…' : 'No evaluation recorded.')}
      </p>
      {m.gate && !m.gate.env && m.gate.accuracy !== null && <GateKl kl={m.gate.kl} budget={m.gate.klBudget} />}
      {m.samples && (
        <p className="muted small">
          {m.samples.pending} new ratings, {m.samples.replay} replayed, {m.samples.heldout} held out
          {m.trainSeconds !== undefined && ` · ${m.trainSeconds.toFixed(1)} s`}
          {m.tokensPerSecond !== undefined && ` · ${Math.round(m.tokensPerSecond)} tokens/s`}
          {weak !== null && <span data-testid="run-weak"> · {weak}</span>}
        </p>
      )}
      {stopped !== null && (
        <p className="muted small" data-testid="run-stopped">
          {stopped}
        </p>
      )}
      {policy !== null && (
        <div className="muted small" data-testid="run-policy">
          {policy.sentence}
          {policy.reasons.length > 0 && (
            <details className="device-why">
              <summary>Why as text?</summary>
              <ul className="small">
                {policy.reasons.map((r) => (
                  <li key={r.why}>
                    {r.count} × {r.why}
                  </li>
                ))}
              </ul>
            </details>
          )}
        </div>
      )}
      {m.device !== undefined && (
        <div className="muted small" data-testid="run-device">
          <DeviceLine device={m.device} />
        </div>
      )}
      {open && m.steps && <RunCurve steps={m.steps} height={160} refs={{ heldout: m.gate?.kl ?? null, budget: m.gate?.klBudget ?? configBudget(run) }} />}
    </li>
  );
}

export function RunList() {
  const runs = useRein(selectRuns);
  const adapters = useRein((s) => s.adapters);
  return (
    <section className="panel" aria-labelledby="runs-title">
      <h2 id="runs-title">Rounds</h2>
      {runs.length === 0 ? (
        <p className="muted">No training rounds yet.</p>
      ) : (
        <ol className="runs" data-testid="runs">
          {runs.map((r) => {
            const a = adapters.find((x) => x.runId === r.id);
            const accepted = a ? a.status !== 'rejected' : null;
            return <RunItem key={r.id} run={r} accepted={accepted} />;
          })}
        </ol>
      )}
    </section>
  );
}
