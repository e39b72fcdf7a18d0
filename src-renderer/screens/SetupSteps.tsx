import { useEffect, useState } from 'react';
import { useShallow } from 'zustand/shallow';
import type { AgentId, LocalModel } from '../../src-main/common/system.ts';
import { durationWords, paramWords, presetEstimates } from '../store/estimate.ts';
import { useRein } from '../store/react.tsx';
import { modelName } from '../store/status.ts';

const PRESET_TITLES = { careful: 'Careful', balanced: 'Balanced', aggressive: 'Aggressive', custom: 'Custom' } as const;
const PRESET_WORDS: Record<string, string> = {
  careful: 'Small changes each round. The model moves slowly towards your ratings and stays close to how it answers today.',
  balanced: 'The default. Each round learns clearly from your ratings without drifting far from the original model.',
  aggressive: 'Bigger changes each round. Picks up your preferences sooner, with more risk of odd answers; the check after each round still turns down a version that drifts too far.',
};

export function AgentsStep() {
  const { agents, plans, connected, plan, connect, busy } = useRein(
    useShallow((s) => ({ agents: s.agents, plans: s.plans, connected: s.agentResults, plan: s.planAgent, connect: s.connectAgent, busy: s.wizardBusy })),
  );
  // Claude Code and Codex can run on the local model itself, through Rein's proxy: their turns are then on-policy.
  const [local, setLocal] = useState<Partial<Record<AgentId, boolean>>>({});
  if (!agents) return <p className="muted">Looking for agents…</p>;
  return (
    <ul className="choices" data-testid="agents">
      {agents.map((a) => {
        const p = plans[a.agent];
        const done = connected[a.agent];
        return (
          <li key={a.agent} className="choice">
            <div className="panel-row">
              <strong>{a.name}</strong>
              <span className={`badge ${a.connected ? 'good' : ''}`}>{a.connected ? 'connected' : a.installed ? 'installed' : 'not found'}</span>
            </div>
            <p className="muted small">{a.error ?? (a.evidence.length > 0 ? a.evidence.join('; ') : 'No binary on PATH and no config folder.')}</p>
            {!a.connected && !done && a.agent !== 'openclaw' && (
              // A line of its own (.check): inline, its words ran on into the button after it.
              <label className="check small">
                <input
                  type="checkbox"
                  checked={local[a.agent] === true}
                  onChange={(e) => {
                    setLocal((l) => ({ ...l, [a.agent]: e.target.checked }));
                    if (p) void plan(a.agent, e.target.checked);
                  }}
                />
                <span>Run it on my local model (through Rein&apos;s model server, so each turn trains on what your model wrote)</span>
              </label>
            )}
            {!a.connected && !p && (
              <button type="button" className="secondary" onClick={() => void plan(a.agent as AgentId, local[a.agent] === true)}>
                Show what connecting changes
              </button>
            )}
            {p && !done && !a.connected && (
              <>
                <ul className="file-changes">
                  {p.changes.map((c) => (
                    <li key={c.path}>
                      <strong>{c.action}</strong> <code className="path">{c.path}</code> — {c.summary}
                    </li>
                  ))}
                </ul>
                <p className="muted small">Each file's current contents are copied to {p.backupsDir} first; `rein uninstall {a.agent}` puts them back.</p>
                <button type="button" className="primary" disabled={busy !== null} onClick={() => void connect(a.agent, local[a.agent] === true)}>
                  Connect {a.name}
                </button>
              </>
            )}
            {done && (
              <p className="small ok" role="status">
                Connected: {done.changes.length} file{done.changes.length === 1 ? '' : 's'} changed{done.backupDir ? `, backup in ${done.backupDir}` : ''}. {done.notes.join(' ')}
              </p>
            )}
          </li>
        );
      })}
    </ul>
  );
}

const SOURCE_WORDS: Record<LocalModel['source'], string> = {
  ollama: 'Ollama',
  lmstudio: 'LM Studio',
  'hf-cache': 'Hugging Face cache',
  folder: 'folder',
  added: 'added',
  demo: 'demo',
  active: 'in use',
};

function sizeWords(bytes: number): string {
  return bytes >= 2 ** 30 ? `${(bytes / 2 ** 30).toFixed(1)} GB` : `${Math.max(1, Math.round(bytes / 2 ** 20))} MB`;
}

/** One model: its name, then what it is (where, architecture, weight type, size) and either the button or why not. */
function ModelChoice({ model: m, chosen, busy, choose }: { model: LocalModel; chosen: boolean; busy: boolean; choose: () => void }) {
  const facts = [
    SOURCE_WORDS[m.source],
    m.arch,
    m.type,
    m.params !== null && `${paramWords(m.params)} parameters`,
    m.bytes !== null && sizeWords(m.bytes),
  ].filter((x): x is string => typeof x === 'string' && x !== '');
  return (
    <li className="choice" data-testid="model-choice" data-model-id={m.id}>
      <div className="panel-row">
        <strong className="model-name">{m.name}</strong>
        <span className="muted small">{facts.join(' · ')}</span>
      </div>
      {m.trainable ? (
        <button type="button" className="secondary" disabled={busy || chosen} aria-label={chosen ? `Chosen: ${m.name}` : `Train this one: ${m.name}`} onClick={choose}>
          {chosen ? 'Chosen' : 'Train this one'}
        </button>
      ) : (
        <p className="muted small why">Rein cannot train it: {m.why}</p>
      )}
    </li>
  );
}

export function ModelStep() {
  const { models, choose, busy, status, addFolder, note } = useRein(
    useShallow((s) => ({ models: s.models, choose: s.chooseModel, busy: s.wizardBusy, status: s.status, addFolder: s.addModelFolder, note: s.folderNote })),
  );
  const [folder, setFolder] = useState('');
  const active = status?.model.configured ? status.model.id : null;
  return (
    <>
      <div className="demo-choice">
        <p>No model yet, or just trying? The demo model ships with Rein: a small language model (under a million parameters) pretrained on coding-assistant chats. It runs and trains offline, a round in a few minutes.</p>
        <button type="button" className="primary" disabled={busy !== null} onClick={() => void choose('demo')}>
          Try with the demo model
        </button>
      </div>
      {active && (
        <p className="ok small" role="status" data-testid="model-chosen">
          Training <strong>{modelName(active)}</strong>{' '}
          {modelName(active) !== active && <code className="path muted">{active}</code>}
        </p>
      )}
      <h3>Models on this computer</h3>
      {!models ? (
        <p className="muted">Looking in Ollama, LM Studio and the Hugging Face cache…</p>
      ) : models.length === 0 ? (
        <p className="muted">None found in Ollama, LM Studio or the Hugging Face cache. Add a folder that holds one (a model folder or .gguf files).</p>
      ) : (
        <ul className="choices" data-testid="model-list">
          {models.map((m) => (
            <ModelChoice key={m.id} model={m} chosen={active === m.id} busy={busy !== null} choose={() => void choose(m.id)} />
          ))}
        </ul>
      )}
      <form
        className="export-row"
        onSubmit={(e) => {
          e.preventDefault();
          if (folder.trim()) void addFolder(folder.trim());
        }}
      >
        <label className="field grow">
          <span>Another folder with models</span>
          <input type="text" value={folder} onChange={(e) => setFolder(e.target.value)} placeholder="/path/to/models" />
        </label>
        <button type="submit" className="secondary">
          Look there
        </button>
      </form>
      {note && (
        <p className={note.error ? 'error small' : 'muted small'} role={note.error ? 'alert' : 'status'} data-testid="folder-note">
          {note.text}
        </p>
      )}
    </>
  );
}

export function PresetStep() {
  const { presets, runs, settings, save, load, openSetting, threshold, modelId } = useRein(
    useShallow((s) => ({
      presets: s.presets,
      runs: s.runs,
      settings: s.settings,
      save: s.saveSettings,
      load: s.loadPresets,
      openSetting: s.openSetting,
      threshold: s.status?.threshold ?? null,
      modelId: s.status?.model.id ?? null,
    })),
  );
  const chosen = settings?.['training.preset'] ?? 'balanced';
  // A round takes the ratings the schedule waits for (status.threshold), the count describePresets times by default;
  // presets loaded for a confirmation were timed for the ratings waiting then, and are asked again (the intro names
  // the count the times shown are for).
  const timed = presets?.roundTime;
  const stale = timed !== undefined && threshold !== null && timed.pending !== threshold;
  // Loaded on arrival, however the step was reached (Next loads them; the step list did not, and showed a lone button).
  const missing = !presets || !timed;
  useEffect(() => {
    if (stale || missing) void load();
  }, [stale, missing, load]);
  if (!presets || !timed) {
    return (
      <p className="muted" role="status">
        Loading the presets for the chosen model…{' '}
        <button type="button" className="link inline-link" onClick={() => void load()}>
          Try again
        </button>
      </p>
    );
  }
  const named = ['careful', 'balanced', 'aggressive'] as const;
  const estimates = presetEstimates(presets, runs);
  const time = (name: (typeof named)[number]) => durationWords(estimates[name]?.seconds ?? timed.seconds[name]);
  const measured = estimates.balanced?.basis === 'runs' ? estimates.balanced.runs : 0;
  const pending = timed.pending;
  return (
    <>
      <p className="muted small" id="preset-intro">
        How much each round may change {modelId ? modelName(modelId) : 'the model'} ({paramWords(presets.shape.activeParams)} parameters). Times are for a round of {pending} ratings on this
        computer,{' '}
        {measured > 0 ? `estimated from the measured speed of your last ${measured === 1 ? 'round' : `${measured} rounds`}.` : "a rough guess from the model's size until Rein has measured a round."}
      </p>
      <fieldset className="presets" aria-describedby="preset-intro">
        <legend className="sr-only">Preset</legend>
        {named.map((name) => (
          <label key={name} className="choice preset" data-preset={name}>
            <input type="radio" name="preset" checked={chosen === name} onChange={() => void save({ 'training.preset': name })} />
            <span>
              <strong>{PRESET_TITLES[name]}</strong> {PRESET_WORDS[name]}
              <span className="muted small preset-time" data-testid={`preset-time-${name}`}>
                A round takes {time(name)}.
              </span>
            </span>
          </label>
        ))}
        <label className="choice preset" data-preset="custom">
          <input type="radio" name="preset" checked={chosen === 'custom'} onChange={() => void save({ 'training.preset': 'custom' })} />
          <span>
            <strong>{PRESET_TITLES.custom}</strong> Balanced, with the numbers you set (
            <button type="button" className="link inline-link" onClick={() => openSetting('training.custom')}>
              Custom preset fields in Settings
            </button>
            ).
          </span>
        </label>
      </fieldset>
      <details className="tech-details" data-testid="preset-details">
        <summary>Technical details</summary>
        <table className="preset-table">
          <thead>
            <tr>
              <th scope="col">Preset</th>
              <th scope="col">Learning rate</th>
              <th scope="col">Steps</th>
              <th scope="col">KL weight β</th>
              <th scope="col">LoRA rank</th>
              <th scope="col">KL budget</th>
            </tr>
          </thead>
          <tbody>
            {named.map((name) => {
              const c = presets.presets[name];
              return (
                <tr key={name}>
                  <th scope="row">{PRESET_TITLES[name]}</th>
                  <td>{Number(c.lr.toPrecision(2))}</td>
                  <td>{c.steps}</td>
                  <td>{Number(c.beta.toPrecision(2))}</td>
                  <td>{c.rank}</td>
                  <td>{Number(c.klBudget.toPrecision(2))}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
        <p className="muted small">
          β weighs staying close to the original model against your ratings; the KL budget is the most a round may move the model, per token of the held-out
          answers, before the check after the round turns it down; the rank is the size of the adapter.
        </p>
      </details>
    </>
  );
}
