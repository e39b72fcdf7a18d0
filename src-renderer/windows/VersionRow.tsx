import type { AdapterView } from '../../src-main/common/domain.ts';
import { publishLines } from '../store/adapters.ts';

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
  onRollback: () => void;
  onRetrain: () => void;
}) {
  const a = props.adapter;
  const publish = publishLines(a);
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
              Roll back to v{a.version}
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
        {a.emaValue !== null && ` · baseline ${a.emaValue >= 0 ? '+' : '−'}${Math.abs(a.emaValue).toFixed(2)}`}
      </p>
      {props.gate && <p className="small gate">{props.gate}</p>}
      {a.status === 'rejected' && a.reason && !props.gate && <p className="small gate">{a.reason}</p>}
      <p className="muted small">
        {publish.length === 0
          ? 'Not published to a model server (turn publishing on in Settings).'
          : publish.join(' · ')}
      </p>
    </li>
  );
}
