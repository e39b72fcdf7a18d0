import { useShallow } from 'zustand/shallow';
import type { Transport } from '../services/api.ts';
import { useRein } from '../store/react.tsx';
import { BASELINE_HELP, BASELINE_LABEL, modelName, selectAdapterText, selectCounts, selectEmaText, selectPendingProgress } from '../store/status.ts';

export function StatusHeader(props: { transport: Transport }) {
  const { status, error, counts, pending, ema, adapter, connected } = useRein(
    useShallow((s) => ({
      status: s.status,
      connected: s.connected,
      error: s.statusError,
      counts: selectCounts(s),
      pending: selectPendingProgress(s),
      ema: selectEmaText(s),
      adapter: selectAdapterText(s),
    })),
  );
  return (
    <header className="status" aria-label="Status">
      <div className="brand">
        <span className="logo" aria-hidden="true">
          ◆
        </span>
        <span className="name">Rein</span>
        <span className="transport" title={props.transport === 'ipc' ? 'Desktop app' : 'Headless: served by rein serve'}>
          {props.transport === 'ipc' ? 'app' : 'headless'}
        </span>
        {!connected && (
          <span className="offline" role="status" data-testid="offline">
            reconnecting…
          </span>
        )}
      </div>
      {error && !status ? (
        <p className="status-error" role="alert">
          Cannot read the status: {error.message}
        </p>
      ) : (
        <dl className="stats">
          <div className="stat model">
            <dt>Model</dt>
            <dd title={status?.model.id} data-testid="header-model">
              {status ? modelName(status.model.id) : '…'}
              {status && !status.model.configured && <span className="hint"> (not set up)</span>}
            </dd>
          </div>
          <div className="stat">
            <dt>Adapter</dt>
            <dd data-testid="adapter">{status ? adapter : '…'}</dd>
          </div>
          <div className="stat">
            <dt>Good</dt>
            <dd className="good" data-testid="count-good">
              {counts?.good ?? '…'}
            </dd>
          </div>
          <div className="stat">
            <dt>Bad</dt>
            <dd className="bad" data-testid="count-bad">
              {counts?.bad ?? '…'}
            </dd>
          </div>
          <div className="stat pending">
            <dt>Next round</dt>
            <dd data-testid="pending">
              {pending ? `${pending.pending} / ${pending.threshold}` : '…'}
              {pending && (
                <progress className="meter" max={pending.threshold} value={Math.min(pending.pending, pending.threshold)} aria-label="Pending ratings toward the training threshold" />
              )}
            </dd>
          </div>
          <div className="stat">
            <dt title={BASELINE_HELP}>{BASELINE_LABEL}</dt>
            <dd data-testid="ema">{status ? (ema ?? '—') : '…'}</dd>
          </div>
        </dl>
      )}
    </header>
  );
}
