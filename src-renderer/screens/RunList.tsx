import { useState } from 'react';
import type { RunView } from '../../src-main/common/domain.ts';
import { RunCurve } from '../components/charts.tsx';
import { useRein } from '../store/react.tsx';
import { deviceSentence, gateSentence, runMetrics, selectRuns } from '../store/training.ts';

/** The KL budget a round ran with (its stored config), for a round the gate never scored. */
function configBudget(run: RunView): number | null {
  const c = run.config as { klBudget?: unknown } | null;
  return typeof c?.klBudget === 'number' ? c.klBudget : null;
}

function RunItem(props: { run: RunView; accepted: boolean | null }) {
  const { run } = props;
  const [open, setOpen] = useState(false);
  const m = runMetrics(run);
  const gate = gateSentence(m.gate, props.accepted);
  const device = deviceSentence(m.device);
  const when = new Date(run.startedAt ?? run.createdAt).toLocaleString();
  return (
    <li className="run" data-run-id={run.id}>
      <div className="run-head">
        {/* A round that finished but whose version the gate turned down reads as rejected, not "succeeded". */}
        <span className={`badge run-${props.accepted === false ? 'failed' : run.status}`}>{props.accepted === false ? 'rejected' : run.status}</span>
        <span className="run-title">
          Round {run.id} · {run.trigger} · {when}
          {run.adapterVersion !== null && ` → v${run.adapterVersion}`}
        </span>
        {m.steps && m.steps.length > 1 && (
          <button type="button" className="link" aria-expanded={open} onClick={() => setOpen(!open)}>
            {open ? 'Hide curve' : 'Curve'}
          </button>
        )}
      </div>
      <p className="run-detail" data-testid="run-gate">
        {run.error ?? gate ?? (run.status === 'running' ? 'Running…' : 'No evaluation recorded.')}
      </p>
      {m.samples && (
        <p className="muted small">
          {m.samples.pending} new ratings, {m.samples.replay} replayed, {m.samples.heldout} held out
          {m.trainSeconds !== undefined && ` · ${m.trainSeconds.toFixed(1)} s`}
          {m.tokensPerSecond !== undefined && ` · ${Math.round(m.tokensPerSecond)} tokens/s`}
        </p>
      )}
      {device !== null && (
        <p className="muted small" data-testid="run-device">
          {device}
        </p>
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
