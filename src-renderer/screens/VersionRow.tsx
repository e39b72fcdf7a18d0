import type { AdapterView } from '../../src-main/common/domain.ts';
import { publishLines, versionMove } from '../store/adapters.ts';
import { useRein } from '../store/react.tsx';
import { BASELINE_LABEL } from '../store/status.ts';

const STATUS_WORDS: Record<AdapterView['status'], string> = {
  active: 'active',
  inactive: 'kept',
  candidate: 'being checked',
  rejected: 'rejected',
  rolled_back: 'rolled back',
};

export function VersionRow(props: {
  adapter: AdapterView;
  trainedOn: number | null;
  gate: string | null;
  busy: boolean;
  active: AdapterView | null;
  /** The core's message when a rollback to or retrain from this version failed. */
  error: string | null;
  onRollback: () => void;
  onRetrain: () => void;
}) {
  const a = props.adapter;
  const publish = publishLines(a);
  const openSetting = useRein((s) => s.openSetting);
  return (
    <li className={`version status-${a.status}`} data-version={a.version}>
      <div className="version-head">
        <span className="version-name">v{a.version}</span>
        <span className={`badge adapter-${a.status}`}>{STATUS_WORDS[a.status]}</span>
        <time className="muted small" dateTime={new Date(a.createdAt).toISOString()}>
          {new Date(a.createdAt).toLocaleString()}
        </time>
        <span className="version-actions">
          {a.status !== 'active' && a.status !== 'rejected' && (
            <button type="button" className="secondary" disabled={props.busy} onClick={props.onRollback}>
              {versionMove(a.version, props.active).label}
            </button>
          )}
          <button type="button" className="link" disabled={props.busy} onClick={props.onRetrain} title={`Train a new round starting from v${a.version}`}>
            Retrain from here
          </button>
        </span>
      </div>
      <p className="small">
        {props.trainedOn !== null && `Trained on ${props.trainedOn} ratings · `}
        {a.parentVersion ? `built on v${a.parentVersion}` : 'built on the base model'}
        {a.runId !== null && ` · round ${a.runId}`}
        {a.emaValue !== null && ` · ${BASELINE_LABEL.toLowerCase()} ${a.emaValue >= 0 ? '+' : '−'}${Math.abs(a.emaValue).toFixed(2)}`}
      </p>
      {props.gate && <p className="small gate">{props.gate}</p>}
      {a.status === 'rejected' && a.reason && !props.gate && <p className="small gate">{a.reason}</p>}
      {props.error && (
        <p className="error small" role="alert" data-testid="version-error">
          {props.error}
        </p>
      )}
      <p className="muted small">
        {publish.length === 0 ? (
          <>
            Not published to a model server (
            <button type="button" className="link inline-link" onClick={() => openSetting('publish.ollama')}>
              turn publishing on in Settings
            </button>
            ).
          </>
        ) : (
          <>
            {publish.join(' · ')}
            {Object.values(a.publish).some((p) => !p.ok) && (
              <>
                {' '}
                <button type="button" className="link inline-link" onClick={() => openSetting('publish.ollama')}>
                  Publishing settings
                </button>
              </>
            )}
          </>
        )}
      </p>
    </li>
  );
}
