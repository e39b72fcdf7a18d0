// The setup wizard (first run, and again from the Setup tab): what this machine has, which agents to connect (with
// the exact files that change), the model to train (or the offline demo model), a preset, and a test turn that
// proves capture works end to end.
import { useEffect } from 'react';
import { useShallow } from 'zustand/shallow';
import type { TrainingDevice } from '../../src-main/common/config.ts';
import type { HardwareInfo } from '../../src-main/common/system.ts';
import { DeviceLine } from '../components/DeviceLine.tsx';
import { useRein } from '../store/react.tsx';
import { modelName } from '../store/status.ts';
import type { WizardStep } from '../store/types.ts';
import { selectTestTurnArrived, WIZARD_STEPS } from '../store/wizard.ts';
import { OtherClients } from './OtherClients.tsx';
import { AgentsStep, ModelStep, PresetStep } from './SetupSteps.tsx';

const TITLES: Record<WizardStep, string> = { welcome: 'Welcome', agents: 'Agents', model: 'Model', preset: 'How hard to train', test: 'Test' };
const gb = (b: number) => `${(b / 2 ** 30).toFixed(1)} GB`;

/**
 * What training can use here. A graphics provider (webgpu, cuda) counts only with a graphics card found: beside
 * "Graphics: none found" it would promise what this computer cannot do, so it is named as what the build supports.
 */
function trainWith(hw: HardwareInfo): string {
  const cpu = hw.providers.filter((p) => p.name === 'cpu');
  const gpu = hw.providers.filter((p) => p.name !== 'cpu');
  const names = (ps: HardwareInfo['providers']) => ps.map((p) => `${p.name}${p.bundled ? '' : ' (needs an extra install)'}`).join(', ');
  const proc = cpu.length > 0 || hw.gpus.length === 0 ? 'the processor (cpu)' : '';
  if (hw.gpus.length > 0 && gpu.length > 0) return [proc, names(gpu)].filter(Boolean).join(', ');
  return gpu.length > 0 ? `${proc}. With a graphics card, this build could also use ${names(gpu)}.` : proc;
}

const DEVICE_WORDS: Record<TrainingDevice, string> = {
  auto: 'Automatic: a GPU that passes a test step, else the processor',
  cpu: 'The processor (cpu)',
  webgpu: 'WebGPU (Metal, Direct3D 12 or Vulkan)',
  cuda: 'CUDA (NVIDIA, with its extra install)',
  dml: 'DirectML (Windows)',
};

/** The `training.device` setting, where the wizard shows the hardware; saved as soon as it changes. */
function DeviceChoice() {
  const { settings, load, save, error } = useRein(useShallow((s) => ({ settings: s.settings, load: s.loadSettings, save: s.saveSettings, error: s.settingErrors['training.device'] })));
  useEffect(() => {
    if (settings === null) void load();
  }, [settings, load]);
  if (settings === null) return null;
  return (
    <div className="field">
      <label htmlFor="wizard-device">Train on</label>
      <select id="wizard-device" value={settings['training.device']} onChange={(e) => void save({ 'training.device': e.target.value as TrainingDevice })}>
        {(Object.keys(DEVICE_WORDS) as TrainingDevice[]).map((d) => (
          <option key={d} value={d}>
            {DEVICE_WORDS[d]}
          </option>
        ))}
      </select>
      {error !== undefined && <p className="error small">{error}</p>}
    </div>
  );
}

function Welcome() {
  const hw = useRein((s) => s.hardware);
  return (
    <>
      <p>Rein asks you Good or Bad after your coding agent answers, and trains a small adapter for your own local model from those ratings. This takes a few steps.</p>
      {hw ? (
        <dl className="facts" data-testid="hardware">
          <div><dt>Processor</dt><dd>{hw.cpuModel} · {hw.cpuCores} cores</dd></div>
          <div><dt>Memory</dt><dd>{gb(hw.memoryBytes)} ({gb(hw.freeMemoryBytes)} free)</dd></div>
          <div><dt>Graphics</dt><dd>{hw.gpus.length === 0 ? 'none found' : hw.gpus.map((g) => g.vendor).join(', ')}</dd></div>
          <div>
            <dt>Can train with</dt>
            <dd data-testid="can-train-with">{trainWith(hw)}</dd>
          </div>
          <div>
            <dt>Training device (auto)</dt>
            <dd data-testid="training-device">
              <DeviceLine device={hw.device} verb="Trains" />
            </dd>
          </div>
        </dl>
      ) : (
        <p className="muted">Looking at this computer…</p>
      )}
      <DeviceChoice />
    </>
  );
}

function TestStep() {
  const { send, result, arrived, busy, status } = useRein(
    useShallow((s) => ({ send: s.sendTestTurn, result: s.testTurn, arrived: selectTestTurnArrived(s), busy: s.wizardBusy === 'test', status: s.status })),
  );
  return (
    <>
      <p>Send a turn through the capture server, the same way your agent's hook does. It should appear right away in the rating popup (desktop app) or on the Rate screen (browser).</p>
      <button type="button" className="primary" onClick={() => void send()} disabled={busy}>
        {busy ? 'Sending…' : 'Send a test turn'}
      </button>
      {result && (
        <p role="status" data-testid="test-result" className={arrived ? 'ok' : ''}>
          {arrived
            ? `Capture works: turn ${result.turnId} went through ${result.url} in ${Math.round(result.ms)} ms and reached this window.`
            : `Posted turn ${result.turnId} to ${result.url}; waiting for it to arrive…`}
        </p>
      )}
      <p className="muted small">Model: {status?.model.configured ? modelName(status.model.id) : 'not chosen yet'}.</p>
    </>
  );
}

export function Setup() {
  const { step, setStep, detect, error, setView, configured } = useRein(
    useShallow((s) => ({ step: s.wizardStep, setStep: s.setWizardStep, detect: s.detect, error: s.wizardError, setView: s.setView, configured: s.status?.model.configured ?? false })),
  );
  useEffect(() => {
    void detect();
  }, [detect]);
  const i = WIZARD_STEPS.indexOf(step);
  return (
    <div className="screen">
      <section className="panel wizard" aria-labelledby="wizard-title" data-testid="wizard">
        <ol className="steps" aria-label="Setup steps">
          {WIZARD_STEPS.map((s, n) => (
            <li key={s} aria-current={s === step ? 'step' : undefined} className={n < i ? 'done' : ''}>
              <button type="button" className="step-button" disabled={!configured && n > WIZARD_STEPS.indexOf('model')} onClick={() => setStep(s)}>
                {n + 1}. {TITLES[s]}
              </button>
            </li>
          ))}
        </ol>
        <h2 id="wizard-title">{TITLES[step]}</h2>
        {step === 'welcome' && <Welcome />}
        {step === 'agents' && (
          <>
            <AgentsStep />
            <OtherClients />
          </>
        )}
        {step === 'model' && <ModelStep />}
        {step === 'preset' && <PresetStep />}
        {step === 'test' && <TestStep />}
        {error && <p className="error" role="alert">{error.message}</p>}
        <div className="wizard-nav">
          <button type="button" className="secondary" disabled={i === 0} onClick={() => setStep(WIZARD_STEPS[i - 1]!)}>
            Back
          </button>
          {/* Past the model step only with a model chosen: the presets and the test need one. */}
          {step === 'model' && !configured && (
            <span className="muted small" id="next-needs-model">
              Choose a model (or the demo model) to go on.
            </span>
          )}
          {i < WIZARD_STEPS.length - 1 ? (
            <button
              type="button"
              className="primary"
              disabled={step === 'model' && !configured}
              aria-describedby={step === 'model' && !configured ? 'next-needs-model' : undefined}
              onClick={() => setStep(WIZARD_STEPS[i + 1]!)}
            >
              Next
            </button>
          ) : (
            <button type="button" className="primary" onClick={() => setView('rate')}>
              Done
            </button>
          )}
        </div>
      </section>
    </div>
  );
}
