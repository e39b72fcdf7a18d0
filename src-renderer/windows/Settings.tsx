// The settings people change often: do not disturb, the popup (on/off, timeout, which agents raise it) and
// automatic training. Every change goes through setSettings, which validates it and names a bad value.
import { useShallow } from 'zustand/shallow';
import { useRein } from '../store/react.tsx';

const AGENT_NAMES: Record<string, string> = { 'claude-code': 'Claude Code', codex: 'Codex', openclaw: 'OpenClaw', proxy: 'OpenAI proxy', api: 'API / test turns' };

export function SettingsView() {
  const { settings, save, error } = useRein(useShallow((s) => ({ settings: s.settings, save: s.saveSettings, error: s.settingsError })));
  if (!settings) return <p className="muted">Loading settings…</p>;
  const popupAgents = settings['popup.agents'];
  const toggleAgent = (a: string) => void save({ 'popup.agents': popupAgents.includes(a) ? popupAgents.filter((x) => x !== a) : [...popupAgents, a] });
  return (
    <div className="screen">
      <section className="panel settings" aria-labelledby="settings-title">
        <h2 id="settings-title">Settings</h2>
        {error && <p className="error" role="alert">{error.message}</p>}
        <label className="check">
          <input type="checkbox" checked={settings['capture.paused']} onChange={(e) => void save({ 'capture.paused': e.target.checked })} data-testid="pause-capture" />
          <span>
            <strong>Pause capture (do not disturb)</strong>
            <span className="muted small">New answers are not stored and no popup appears. Ratings still work.</span>
          </span>
        </label>
        <label className="check">
          <input type="checkbox" checked={settings['popup.enabled']} onChange={(e) => void save({ 'popup.enabled': e.target.checked })} />
          <span>
            <strong>Ask Good / Bad after each answer</strong>
            <span className="muted small">The popup. Without it, rate from the Rate tab or with /rl in your agent.</span>
          </span>
        </label>
        <label className="field inline">
          <span>Close an unanswered popup after (seconds, 0 = never; counts as ignored)</span>
          <input
            type="number"
            min={0}
            max={3600}
            value={settings['popup.timeoutSeconds']}
            onChange={(e) => {
              const n = Number(e.target.value);
              if (Number.isInteger(n) && n >= 0 && n <= 3600) void save({ 'popup.timeoutSeconds': n });
            }}
          />
        </label>
        <fieldset className="agents-pick">
          <legend>Agents that raise the popup</legend>
          {settings['capture.agents'].map((a) => (
            <label key={a} className="check compact">
              <input type="checkbox" checked={popupAgents.includes(a)} onChange={() => toggleAgent(a)} />
              <span>{AGENT_NAMES[a] ?? a}</span>
            </label>
          ))}
        </fieldset>
        <label className="check">
          <input type="checkbox" checked={settings['training.auto']} onChange={(e) => void save({ 'training.auto': e.target.checked })} />
          <span>
            <strong>Train automatically</strong>
            <span className="muted small">Start a round when {settings['training.threshold']} ratings are waiting.</span>
          </span>
        </label>
      </section>
    </div>
  );
}
