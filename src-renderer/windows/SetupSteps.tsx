import { useState } from 'react';
import { useShallow } from 'zustand/shallow';
import type { AgentId } from '../../src-main/common/system.ts';
import { useRein } from '../store/react.tsx';

const PRESET_WORDS: Record<string, string> = {
  careful: 'Small steps. Changes the model slowly; best when you rate only now and then.',
  balanced: 'The default. Learns from each round without drifting far from the original model.',
  aggressive: 'Bigger steps. Picks up your preferences faster, with more risk of odd answers (the check still guards).',
};

export function AgentsStep() {
  const { agents, plans, connected, plan, connect, busy } = useRein(
    useShallow((s) => ({ agents: s.agents, plans: s.plans, connected: s.agentResults, plan: s.planAgent, connect: s.connectAgent, busy: s.wizardBusy })),
  );
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
            {!a.connected && !p && (
              <button type="button" className="secondary" onClick={() => void plan(a.agent as AgentId)}>
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
                <button type="button" className="primary" disabled={busy !== null} onClick={() => void connect(a.agent)}>
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

export function ModelStep() {
  const { models, choose, busy, status, addFolder, note } = useRein(
    useShallow((s) => ({ models: s.models, choose: s.chooseModel, busy: s.wizardBusy, status: s.status, addFolder: s.addModelFolder, note: s.folderNote })),
  );
  const [folder, setFolder] = useState('');
  const active = status?.model.configured ? status.model.id : null;
  return (
    <>
      <div className="demo-choice">
        <p>No model yet, or just trying? The demo model is tiny, made on this computer, and trains in about a minute offline.</p>
        <button type="button" className="primary" disabled={busy !== null} onClick={() => void choose('demo')}>
          Try with the demo model
        </button>
      </div>
      {active && (
        <p className="ok small" role="status" data-testid="model-chosen">
          Training: <code className="path">{active}</code>
        </p>
      )}
      <h3>Models on this computer</h3>
      {!models ? (
        <p className="muted">Looking in the Hugging Face cache and Ollama…</p>
      ) : models.length === 0 ? (
        <p className="muted">None found in the Hugging Face cache or Ollama. Add a folder that holds one.</p>
      ) : (
        <ul className="choices">
          {models.map((m) => (
            <li key={m.path} className="choice">
              <div className="panel-row">
                <strong>{m.name}</strong>
                <span className="muted small">
                  {m.source}
                  {m.params !== null && ` · ${m.params >= 1e9 ? `${(m.params / 1e9).toFixed(1)}B` : m.params >= 1e6 ? `${(m.params / 1e6).toFixed(0)}M` : `${Math.round(m.params / 1e3)}k`} parameters`}
                </span>
              </div>
              {m.trainable ? (
                <button type="button" className="secondary" disabled={busy !== null || active === m.path} onClick={() => void choose(m.path)}>
                  {active === m.path ? 'Chosen' : 'Train this one'}
                </button>
              ) : (
                <p className="muted small">{m.why}</p>
              )}
            </li>
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
  const { presets, settings, save, load, openSetting } = useRein(
    useShallow((s) => ({ presets: s.presets, settings: s.settings, save: s.saveSettings, load: s.loadPresets, openSetting: s.openSetting })),
  );
  const chosen = settings?.['training.preset'] ?? 'balanced';
  if (!presets) {
    return (
      <button type="button" className="secondary" onClick={() => void load()}>
        Show the presets for the chosen model
      </button>
    );
  }
  return (
    <fieldset className="presets">
      <legend className="muted small">Numbers for a {presets.bucket} model ({Math.round(presets.shape.activeParams).toLocaleString()} parameters).</legend>
      {(['careful', 'balanced', 'aggressive', 'custom'] as const).map((name) => {
        const c = name === 'custom' ? null : presets.presets[name];
        return (
          <label key={name} className="choice preset">
            <input type="radio" name="preset" checked={chosen === name} onChange={() => void save({ 'training.preset': name })} />
            <span>
              <strong>{name}</strong>{' '}
              {c ? (
                PRESET_WORDS[name]
              ) : (
                <>
                  Your own numbers (
                  <button type="button" className="link inline-link" onClick={() => openSetting('training.custom')}>
                    Custom preset fields in Settings
                  </button>
                  ); the demo model uses this.
                </>
              )}
              {c && (
                <span className="muted small preset-numbers">
                  learning rate {c.lr}, {c.steps} steps, KL weight β {c.beta}, LoRA rank {c.rank}, KL budget {c.klBudget}
                </span>
              )}
            </span>
          </label>
        );
      })}
    </fieldset>
  );
}
