// Adapter history: every version with its status, date, ratings trained on, gate metrics, lineage and publish status;
// one-click rollback (with a confirmation that says what changes), retrain from a version, and reset.
import { useEffect, useState } from 'react';
import { useShallow } from 'zustand/shallow';
import type { AdapterView } from '../../src-main/common/domain.ts';
import { Confirm } from '../components/Confirm.tsx';
import { rollbackSummary, selectActiveAdapter, servedSummary } from '../store/adapters.ts';
import { useRein } from '../store/react.tsx';
import { gateSentence, runMetrics } from '../store/training.ts';
import { VersionRow } from './VersionRow.tsx';

export function Versions() {
  const { adapters, active, busy, error, rollback, reset, retrain, load, runs, status, lastReset } = useRein(
    useShallow((s) => ({
      adapters: s.adapters,
      active: selectActiveAdapter(s),
      busy: s.adapterBusy,
      error: s.adaptersError,
      rollback: s.rollback,
      reset: s.reset,
      retrain: s.retrain,
      load: s.loadAdapters,
      runs: s.runs,
      status: s.status,
      lastReset: s.lastReset,
    })),
  );
  const [confirm, setConfirm] = useState<{ kind: 'rollback'; version: number } | { kind: 'reset' } | null>(null);
  useEffect(() => {
    void load();
  }, [load]);
  const runOf = (a: AdapterView) => runs.find((r) => r.id === a.runId) ?? null;
  const folder = adapters[0] ? adapters[0].path.replace(/[\\/]v\d+[\\/]?$/, '') : null;
  return (
    <div className="screen">
      <section className="panel" aria-labelledby="versions-title">
        <div className="panel-row">
          <h2 id="versions-title">Adapter versions</h2>
          <span className="muted" data-testid="active-version">
            {servedSummary(active)}
          </span>
        </div>
        {folder && (
          <p className="muted small">
            Saved in <code className="path">{folder}</code> (each version as a PEFT folder).
          </p>
        )}
        {error && <p className="error" role="alert">{error.message}</p>}
        {adapters.length === 0 ? (
          <p className="muted">No versions yet. The first round that passes the check becomes v1.</p>
        ) : (
          <ol className="versions" data-testid="versions">
            {adapters.map((a) => {
              const run = runOf(a);
              const gate = gateSentence(runMetrics(a).gate, a.status === 'rejected' ? false : a.status === 'candidate' ? null : true);
              return (
                <VersionRow
                  key={a.id}
                  adapter={a}
                  trainedOn={run ? (runMetrics(run).samples?.pending ?? run.samples) : null}
                  gate={gate}
                  busy={busy !== null}
                  onRollback={() => setConfirm({ kind: 'rollback', version: a.version })}
                  onRetrain={() => void retrain(a.version)}
                />
              );
            })}
          </ol>
        )}
        {active && (
          <div className="panel-row">
            <span className="muted small">Go back to the model without any adapter:</span>
            <button type="button" className="secondary" disabled={busy !== null} onClick={() => setConfirm({ kind: 'rollback', version: 0 })}>
              Use the base model
            </button>
          </div>
        )}
      </section>
      <section className="panel danger-zone" aria-labelledby="reset-title">
        <h2 id="reset-title">Start over</h2>
        <p className="muted small">
          Deletes every rating, round and adapter version of {status?.model.id ?? 'this model'} and unpublishes it. Captured turns are kept.
        </p>
        <button type="button" className="danger" disabled={busy !== null} onClick={() => setConfirm({ kind: 'reset' })}>
          Reset…
        </button>
        {lastReset && (
          <p className="muted small" role="status">
            Deleted {lastReset.ratings} ratings, {lastReset.runs} rounds and {lastReset.adapters} versions.
          </p>
        )}
      </section>
      {confirm?.kind === 'rollback' && (
        <Confirm
          title={confirm.version === 0 ? 'Use the base model?' : `Roll back to v${confirm.version}?`}
          confirmLabel={confirm.version === 0 ? 'Use the base model' : `Roll back to v${confirm.version}`}
          onCancel={() => setConfirm(null)}
          onConfirm={() => {
            const v = confirm.version;
            setConfirm(null);
            void rollback(v);
          }}
        >
          <p>{rollbackSummary(confirm.version, active)}</p>
        </Confirm>
      )}
      {confirm?.kind === 'reset' && (
        <Confirm
          title="Reset everything you trained?"
          confirmLabel="Delete ratings, rounds and versions"
          danger
          onCancel={() => setConfirm(null)}
          onConfirm={() => {
            setConfirm(null);
            void reset();
          }}
        >
          <p>
            This deletes {status?.ratings.total ?? 0} ratings, {runs.length} rounds and {adapters.length} adapter versions. It cannot be undone. Captured turns stay, so you can rate them again.
          </p>
        </Confirm>
      )}
    </div>
  );
}
