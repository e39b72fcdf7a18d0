// One setting's row on the Settings screen, built from its JSON Schema (store/setting-form.ts): the control, the
// help text from common/config.ts, and the core's message beside the field when it refuses a value. Typed values
// (numbers, text, JSON) are saved when the field loses focus or on Enter, never per keystroke; Escape puts the saved
// value back.
import { useState } from 'react';
import type { KeyboardEvent } from 'react';
import { useShallow } from 'zustand/shallow';
import type { SettingDescription } from '../../src-main/common/config.ts';
import { sourceName } from '../components/format.ts';
import { useRein } from '../store/react.tsx';
import { draftOf, fieldSpec, parseDraft, rangeHint, type EmptyMeans, type FieldSpec } from '../store/setting-form.ts';
import { RewardMapperField } from './RewardMapper.tsx';

/** Plain names for the settings; the key stays visible beside it (help texts and the CLI use the key). */
const TITLES: Record<string, string> = {
  'capture.paused': 'Pause capture (do not disturb)',
  'capture.maxTextChars': 'Longest text stored (characters)',
  'capture.expireHours': 'Answers can be rated for (hours)',
  'capture.agents': 'Agents whose answers are stored',
  'training.threshold': 'Ratings that start a round',
  'training.auto': 'Train automatically',
  'training.schedule': 'When rounds start',
  'training.preset': 'Training preset',
  'training.replayRatio': 'Older ratings replayed per round',
  'training.custom': 'Custom preset fields',
  'training.device': 'Where training runs (CPU or GPU)',
  'training.rewardMapper': 'Reward mapper',
  'training.implicit': 'Train on labels read from your reactions',
  'training.onlyWhenIdle': 'Train only while the computer is idle',
  'training.matchLlamaCpp': 'Train on what llama.cpp computes (GGUF bases)',
  'training.keepQuantized': 'Keep 4- and 8-bit weights quantized while training (GGUF bases)',
  'popup.enabled': 'Ask Good / Bad after each answer',
  'popup.timeoutSeconds': 'Close an unanswered popup after (seconds)',
  'popup.agents': 'Agents that raise the popup',
  'reward.ask': 'When the popup asks',
  'reward.unsureMargin': 'How unsure the reward model must be to ask',
  'reward.gateBlocks': 'Let the reward model reject a new version',
  'reward.gatePrompts': 'Prompts the reward model judges per round',
  'reward.pseudoLabelWeight': "Weight of the reward model's own labels",
  'server.port': 'Capture server port',
  'server.rateLimitPerMinute': 'Requests per minute',
  'adapters.keepInactive': 'Older versions kept on disk',
  'proxy.port': 'Proxy port',
  'proxy.upstream': 'Proxy upstream URL',
  'proxy.upstreamKind': 'Upstream kind',
  'proxy.upstreamApiKey': 'Upstream API key',
  'proxy.baseModelName': 'Upstream base model name',
  'serving.modelGguf': 'Base model GGUF file',
  'serving.contextSize': 'Context length (tokens)',
  'publish.ollama': 'Publish to Ollama',
  'publish.vllm': 'Publish to vLLM',
  'publish.llamaServer': 'Publish to llama-server',
  'publish.lmStudio': 'Publish to LM Studio',
  'app.startAtLogin': 'Start at login',
  'model.active': 'Model being trained',
  'models.folders': 'Folders searched for models',
};


/** Names of the fields inside object settings that a plain split of the camelCase name would read badly. */
const FIELD_TITLES: Record<string, string> = {
  url: 'URL',
  apiKey: 'API key',
  maxLoraRank: 'Max LoRA rank',
  modelsDir: 'Models folder',
  base: 'Base model',
  lr: 'Learning rate',
  beta: 'β (KL weight)',
  rank: 'LoRA rank',
  alpha: 'LoRA alpha',
  ratioClipLow: 'Ratio clip, low',
  ratioClipHigh: 'Ratio clip, high',
  bandLow: 'Drift band, low',
  bandHigh: 'Drift band, high',
  ktoBeta: 'KTO β',
  ktoDesirable: 'KTO weight, Good',
  ktoUndesirable: 'KTO weight, Bad',
  klBudget: 'KL budget',
  maxGradNorm: 'Max gradient norm',
  everyMinutes: 'Every (minutes)',
  at: 'At (HH:MM, local time)',
  minPending: 'At least (ratings pending)',
};

/**
 * A help text from common/config.ts as the form shows it: `code` in backticks as code, and "null" (the CLI's word
 * for an empty value) as "empty", which is what the field takes.
 */
function HelpText(props: { text: string; nullable: boolean }) {
  const text = props.nullable ? props.text.replace(/\bnull\b/g, 'empty') : props.text;
  return (
    <>
      {text.split('`').map((part, i) => (i % 2 === 1 ? <code key={i}>{part}</code> : part))}
    </>
  );
}

const isNullable = (spec: FieldSpec): boolean =>
  ((spec.kind === 'number' || spec.kind === 'text' || spec.kind === 'enum') && spec.nullable) || (spec.kind === 'object' && spec.fields.some((f) => isNullable(f.spec)));

const words = (name: string) => FIELD_TITLES[name] ?? name.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/^./, (c) => c.toUpperCase());

export const settingTitle = (key: string) => TITLES[key] ?? key;

/**
 * The training.schedule fields each mode reads (common/training/schedule.ts): threshold waits for training.threshold
 * alone; interval reads everyMinutes and minPending; nightly reads at and minPending.
 */
export function scheduleFieldInUse(mode: unknown, field: string): boolean {
  if (field === 'mode') return true;
  if (mode === 'interval') return field === 'everyMinutes' || field === 'minPending';
  if (mode === 'nightly') return field === 'at' || field === 'minPending';
  return false;
}
export const settingDomId = (key: string) => `setting-${key}`;

export function SettingRow(props: { d: SettingDescription }) {
  const { d } = props;
  const { value, error, saved, save, setError, preset } = useRein(
    useShallow((s) => ({
      value: s.settings ? (s.settings as Record<string, unknown>)[d.key] : undefined,
      error: s.settingErrors[d.key] ?? null,
      saved: s.settingSaved === d.key,
      save: s.saveSettings,
      setError: s.setSettingError,
      preset: s.settings?.['training.preset'],
    })),
  );
  const spec = fieldSpec(d.jsonSchema);
  const id = settingDomId(d.key);
  const commit = (v: unknown) => save({ [d.key]: v });
  const onLocal = (m: string | null) => setError(d.key, m);
  const helpId = `${id}-help`;
  const errId = `${id}-error`;
  const described = error ? `${helpId} ${errId}` : helpId;
  const control = () => {
    if (d.key === 'training.rewardMapper') return <RewardMapperField id={`${id}-input`} describedBy={described} />;
    switch (spec.kind) {
      case 'boolean':
        return null;
      case 'list':
        return <ListField id={`${id}-input`} value={value as string[]} options={d.default as string[]} onSave={commit} />;
      case 'object': {
        const obj = (value ?? {}) as Record<string, unknown>;
        const inUse = d.key === 'training.schedule' ? (f: string) => scheduleFieldInUse(obj.mode, f) : undefined;
        const fields = <ObjectField id={`${id}-input`} spec={spec} value={obj} error={error} onSave={commit} onLocal={onLocal} inUse={inUse} />;
        // The custom preset's many fields matter only while the custom preset is chosen (or one of them is set).
        if (d.key !== 'training.custom') return fields;
        const set = Object.keys((value ?? {}) as object).length;
        return (
          <details className="setting-more" open={preset === 'custom' || set > 0 || error !== null}>
            <summary>
              {spec.fields.length} fields{set > 0 ? `, ${set} set` : ''}; each one left empty comes from the preset
            </summary>
            {fields}
          </details>
        );
      }
      default:
        return <Control id={`${id}-input`} spec={spec} value={value} empty={emptyOf(spec)} describedBy={described} invalid={error !== null} onSave={commit} onLocal={onLocal} />;
    }
  };
  const title = settingTitle(d.key);
  return (
    <div className={`setting${error ? ' has-error' : ''}`} id={id} data-setting={d.key}>
      {spec.kind === 'boolean' ? (
        <label className="setting-title check-title">
          <input id={`${id}-input`} type="checkbox" checked={value === true} aria-describedby={described} onChange={(e) => void commit(e.target.checked)} />
          <strong>{title}</strong>
          <code className="setting-key">{d.key}</code>
        </label>
      ) : (
        <label className="setting-title" htmlFor={spec.kind === 'list' || spec.kind === 'object' ? undefined : `${id}-input`}>
          <strong>{title}</strong>
          <code className="setting-key">{d.key}</code>
        </label>
      )}
      {control()}
      <p className="muted small setting-help" id={helpId}>
        <HelpText text={d.help} nullable={isNullable(spec)} />
        {rangeHint(spec) && ` Allowed: ${rangeHint(spec)}.`}
      </p>
      <p className="setting-status small" aria-live="polite">
        {error ? (
          <span className="error" id={errId}>
            Not saved: {error}
          </span>
        ) : saved ? (
          <span className="ok">Saved</span>
        ) : null}
      </p>
    </div>
  );
}

function emptyOf(spec: FieldSpec, required = true): EmptyMeans {
  if (!required) return 'absent';
  return (spec.kind === 'number' || spec.kind === 'text' || spec.kind === 'enum') && spec.nullable ? 'null' : 'refuse';
}

/** A value typed as text: saved on blur or Enter, refused here only when the core could not read it at all. */
function Control(props: {
  id: string;
  spec: FieldSpec;
  value: unknown;
  empty: EmptyMeans;
  describedBy?: string;
  invalid: boolean;
  onSave: (v: unknown) => Promise<boolean>;
  onLocal: (message: string | null) => void;
  label?: string;
}) {
  const { spec } = props;
  const [draft, setDraft] = useState<string | null>(null);
  if (spec.kind === 'enum') {
    return (
      <select id={props.id} aria-label={props.label} value={props.value === null || props.value === undefined ? '' : String(props.value)} aria-describedby={props.describedBy} onChange={(e) => void props.onSave(e.target.value === '' ? (props.empty === 'absent' ? undefined : null) : e.target.value)}>
        {props.empty !== 'refuse' && <option value="">{props.empty === 'absent' ? '(from the preset)' : '(none)'}</option>}
        {spec.options.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    );
  }
  if (spec.kind === 'boolean') {
    return <input id={props.id} type="checkbox" aria-label={props.label} checked={props.value === true} onChange={(e) => void props.onSave(e.target.checked)} />;
  }
  const shown = draft ?? draftOf(spec, props.value);
  const commit = async () => {
    if (draft === null) return;
    const p = parseDraft(spec, draft, props.empty);
    if (!p.ok) {
      props.onLocal(p.message);
      return;
    }
    // The save answers later: if the person typed again meanwhile, their new draft stays (clearing it would show the
    // saved value, and the next blur would save nothing; settings-flows caught it under load).
    const saving = draft;
    if (await props.onSave(p.value)) setDraft((d) => (d === saving ? null : d));
  };
  const onKey = (e: KeyboardEvent<HTMLInputElement | HTMLTextAreaElement>) => {
    if (e.key === 'Enter' && e.currentTarget.tagName === 'INPUT') e.currentTarget.blur();
    if (e.key === 'Escape') {
      setDraft(null);
      props.onLocal(null);
    }
  };
  const common = {
    id: props.id,
    'aria-label': props.label,
    'aria-describedby': props.describedBy,
    'aria-invalid': props.invalid || undefined,
    value: shown,
    onChange: (e: { target: { value: string } }) => setDraft(e.target.value),
    onBlur: () => void commit(),
    onKeyDown: onKey,
  };
  if (spec.kind === 'json') return <textarea {...common} rows={Math.min(12, shown.split('\n').length + 1)} spellCheck={false} className="mono" />;
  if (spec.kind === 'number') return <input {...common} type="number" step="any" placeholder={props.empty === 'absent' ? 'preset' : undefined} />;
  return <input {...common} type="text" spellCheck={false} className="wide" placeholder={props.empty === 'null' ? 'none' : undefined} />;
}

function ListField(props: { id: string; value: string[]; options: string[]; onSave: (v: unknown) => Promise<boolean> }) {
  const all = [...new Set([...props.options, ...props.value])];
  const toggle = (a: string) => void props.onSave(props.value.includes(a) ? props.value.filter((x) => x !== a) : [...props.value, a]);
  return (
    <div className="setting-list" id={props.id} role="group">
      {all.map((a) => (
        <label key={a} className="check compact">
          <input type="checkbox" checked={props.value.includes(a)} onChange={() => toggle(a)} />
          <span>{sourceName(a)}</span>
        </label>
      ))}
    </div>
  );
}

/** An object setting (publish.*, training.custom): one control per field; a change saves the whole object. */
function ObjectField(props: {
  id: string;
  spec: Extract<FieldSpec, { kind: 'object' }>;
  value: Record<string, unknown>;
  error: string | null;
  onSave: (v: unknown) => Promise<boolean>;
  onLocal: (message: string | null) => void;
  /** Which fields matter now (the rest are kept but not shown); all when absent. */
  inUse?: (field: string) => boolean;
}) {
  const saveField = (name: string, v: unknown) => {
    const next = { ...props.value };
    if (v === undefined) delete next[name];
    else next[name] = v;
    return props.onSave(next);
  };
  return (
    <div className="setting-object" id={props.id} role="group">
      {props.spec.fields.filter((f) => props.inUse?.(f.name) ?? true).map((f) => {
        const fid = `${props.id}-${f.name}`;
        // The core's message names the field ("url: Invalid URL"): it marks that input.
        const mine = props.error?.startsWith(`${f.name}: `) === true;
        const label = words(f.name);
        const box = f.spec.kind === 'boolean';
        return (
          <div key={f.name} className={`setting-sub${box ? ' check-sub' : ''}`}>
            {!box && <label htmlFor={fid}>{label}</label>}
            <Control
              id={fid}
              spec={f.spec}
              value={props.value[f.name]}
              empty={emptyOf(f.spec, f.required)}
              describedBy={f.help ? `${fid}-help` : undefined}
              invalid={mine}
              onSave={(v) => saveField(f.name, v)}
              onLocal={props.onLocal}
            />
            {box && <label htmlFor={fid}>{label}</label>}
            {f.help && (
              <span className="muted small" id={`${fid}-help`}>
                {f.help}
              </span>
            )}
          </div>
        );
      })}
    </div>
  );
}
