// Adapter versions: every version with its status, date, ratings trained on, gate metrics, lineage and publish status;
// moving between versions (with a confirmation that says what changes), retrain from a version, and reset. Each
// action's failure is shown beside the control that started it.
import { useEffect, useState } from 'react';
import { useShallow } from 'zustand/shallow';
import type { AdapterView } from '../../src-main/common/domain.ts';
import { Confirm } from '../components/Confirm.tsx';
import { TrainConfirm } from '../components/TrainConfirm.tsx';
import { selectActiveAdapter, servedSummary, versionMove } from '../store/adapters.ts';
import { useRein } from '../store/react.tsx';
import { gateSentence, runMetrics } from '../store/training.ts';
import { VersionRow } from './VersionRow.tsx';
import { VersionStatsPanel } from '../screens/VersionStats.tsx';

type Asking = { kind: 'move'; version: number } | { kind: 'retrain'; version: number } | { kind: 'reset' } | null;

export function Versions() {
  const { adapters, active, busy, error, actionError, rollback, reset, retrain, load, runs, status, lastReset, plan, loadPlan } = useRein(
    useShallow((s) => ({
      adapters: s.adapters,
      active: selectActiveAdapter(s),
      busy: s.adapterBusy,
      error: s.adaptersError,
      actionError: s.adapterActionError,
      rollback: s.rollback,
      reset: s.reset,
      retrain: s.retrain,
      load: s.loadAdapters,
      runs: s.runs,
      status: s.status,
      lastReset: s.lastReset,
      plan: s.resetPlan,
      loadPlan: s.loadResetPlan,
    })),
  );
  const [asking, setAsking] = useState<Asking>(null);
  useEffect(() => {
    void load();
  }, [load]);
  const runOf = (a: AdapterView) => runs.find((r) => r.id === a.runId) ?? null;
  const folder = adapters[0] ? adapters[0].path.replace(/[\\/]v\d+[\\/]?$/, '') : null;
  const errorAt = (action: string) => (actionError?.action === action ? actionError.error.message : null);
  const rowError = (v: number) => {
    const moved = errorAt(`rollback:${v}`);
    if (moved) return `Could not switch to v${v}: ${moved}`;
    const retrained = errorAt(`retrain:${v}`);
    return retrained ? `Retrain did not start: ${retrained}` : null;
  };
  const move = asking?.kind === 'move' ? versionMove(asking.version, active) : null;
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
                  active={active}
                  trainedOn={run ? (runMetrics(run).samples?.pending ?? run.samples) : null}
                  gate={gate}
                  busy={busy !== null}
                  error={rowError(a.version)}
                  onRollback={() => setAsking({ kind: 'move', version: a.version })}
                  onRetrain={() => setAsking({ kind: 'retrain', version: a.version })}
                />
              );
            })}
          </ol>
        )}
        {active && (
          <div className="panel-row">
            <span className="muted small">Go back to the model without any adapter:</span>
            <button type="button" className="secondary" disabled={busy !== null} onClick={() => setAsking({ kind: 'move', version: 0 })}>
              Use the base model
            </button>
          </div>
        )}
        {errorAt('rollback:0') && (
          <p className="error small" role="alert">
            {errorAt('rollback:0')}
          </p>
        )}
      </section>
      <VersionStatsPanel />
      <section className="panel danger-zone" aria-labelledby="reset-title">
        <h2 id="reset-title">Start over</h2>
        <p className="muted small">
          Deletes every rating, round and adapter version of {status?.model.id ?? 'this model'} and unpublishes it. Captured turns are kept.
        </p>
        <button
          type="button"
          className="danger"
          disabled={busy !== null}
          onClick={() => {
            void loadPlan();
            setAsking({ kind: 'reset' });
          }}
        >
          Reset…
        </button>
        {errorAt('reset') && (
          <p className="error small" role="alert">
            {errorAt('reset')}
          </p>
        )}
        {lastReset && (
          <p className="muted small" role="status" data-testid="reset-result">
            Deleted {lastReset.ratings} ratings, {lastReset.runs} rounds and {lastReset.adapters} versions.
          </p>
        )}
      </section>
      {asking?.kind === 'move' && move && (
        <Confirm
          title={move.title}
          confirmLabel={move.label}
          onCancel={() => setAsking(null)}
          onConfirm={() => {
            setAsking(null);
            void rollback(asking.version);
          }}
        >
          <p data-testid="confirm-text">{move.summary}</p>
        </Confirm>
      )}
      {asking?.kind === 'retrain' && (
        <TrainConfirm
          action={{ kind: 'retrain', fromVersion: asking.version }}
          onCancel={() => setAsking(null)}
          onConfirm={() => {
            setAsking(null);
            void retrain(asking.version);
          }}
        />
      )}
      {asking?.kind === 'reset' && (
        <Confirm
          title="Reset everything you trained?"
          confirmLabel="Delete ratings, rounds and versions"
          danger
          onCancel={() => setAsking(null)}
          onConfirm={() => {
            setAsking(null);
            void reset();
          }}
        >
          <p data-testid="confirm-text">
            {plan === null
              ? 'Counting what would be deleted…'
              : `This deletes ${plan.ratings} rating${plan.ratings === 1 ? '' : 's'}${plan.undone > 0 ? ` (${plan.undone} of them undone earlier)` : ''}, ${plan.runs} round${plan.runs === 1 ? '' : 's'} and ${plan.adapters} adapter version${plan.adapters === 1 ? '' : 's'}. It cannot be undone. Captured turns stay, so you can rate them again.`}
          </p>
        </Confirm>
      )}
    </div>
  );
}
