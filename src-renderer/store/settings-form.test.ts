// The Settings form derived from the real schema (describeSettings from common/config.ts), the way a typed draft
// becomes a value, where the core's refusal is shown, and the round-time estimate of the training confirmations.
import { describe, expect, it } from 'vitest';
import type { ReinApi, Subscribe } from '../../src-main/common/api.ts';
// The real schema the core sends (describeSettings), not a copy written for the test; only this test imports a value.
// eslint-disable-next-line rein/layers
import { describeSettings } from '../../src-main/common/config.ts';
import type { RunView } from '../../src-main/common/domain.ts';
import { ApiError, type ReinClient } from '../services/api.ts';
import type { PresetTable } from '../../src-main/common/training/presets.ts';
import { durationWords, presetEstimates, roundEstimate, timedRound } from './estimate.ts';
import { createReinStore } from './index.ts';
import { fieldSpec, parseDraft } from './setting-form.ts';
import { selectSettingSections, settingMessage } from './settings.ts';

const specOf = (key: string) => fieldSpec(describeSettings().find((d) => d.key === key)!.jsonSchema);

describe('the settings form from describeSettings', () => {
  it('gives every setting a control, and puts each in a section', () => {
    const all = describeSettings();
    // Only training.custom's nested-free object and the plain kinds: no setting falls back to raw JSON.
    expect(all.filter((d) => fieldSpec(d.jsonSchema).kind === 'json').map((d) => d.key)).toEqual([]);
    expect(specOf('popup.timeoutSeconds')).toEqual({ kind: 'number', integer: true, min: 0, max: 3600, nullable: false });
    expect(specOf('training.preset')).toMatchObject({ kind: 'enum', options: ['careful', 'balanced', 'aggressive', 'custom'] });
    expect(specOf('proxy.upstream')).toEqual({ kind: 'text', nullable: true, url: true });
    expect(specOf('popup.agents')).toEqual({ kind: 'list' });
    const ollama = specOf('publish.ollama');
    expect(ollama.kind === 'object' && ollama.fields.map((f) => [f.name, f.spec.kind, f.required])).toEqual([
      ['enabled', 'boolean', true],
      ['url', 'text', true],
      ['base', 'text', true],
    ]);
    const custom = specOf('training.custom');
    expect(custom.kind === 'object' && custom.fields.find((f) => f.name === 'steps')).toMatchObject({ required: false, help: 'Optimizer steps in one round.' });
    const store = createReinStore({} as ReinClient);
    store.setState({ settingDescriptions: all });
    const sections = selectSettingSections(store.getState());
    expect(sections.flatMap((g) => g.items.map((d) => d.key)).sort()).toEqual(all.map((d) => d.key).sort());
  });

  it('never reads an emptied number field as 0, and leaves range checks to the core', () => {
    const n = specOf('popup.timeoutSeconds');
    expect(parseDraft(n, '', 'refuse')).toEqual({ ok: false, message: 'Enter a number; an empty field is not saved.' });
    expect(parseDraft(n, '  ', 'refuse').ok).toBe(false);
    expect(parseDraft(n, 'abc', 'refuse')).toEqual({ ok: false, message: '"abc" is not a number.' });
    // 2.5 goes to the core as 2.5 (it refuses it for an integer setting, and that message is shown), never as 2.
    expect(parseDraft(n, '2.5', 'refuse')).toEqual({ ok: true, value: 2.5 });
    expect(parseDraft(specOf('proxy.upstream'), '', 'null')).toEqual({ ok: true, value: null });
    expect(parseDraft(n, '', 'absent')).toEqual({ ok: true, value: undefined });
  });

  it('shows the core’s refusal beside the field it names, and keeps the saved value', async () => {
    const calls: unknown[] = [];
    const on: Subscribe = () => () => {};
    const client = {
      on,
      setSettings: async (input: { values: Record<string, unknown> }) => {
        calls.push(input.values);
        if (input.values['popup.timeoutSeconds'] === 2.5) {
          throw new ApiError({ code: 'bad_input', message: 'setSettings: popup.timeoutSeconds: Invalid input: expected int, received number', field: 'popup.timeoutSeconds' }, 400);
        }
        return { 'popup.timeoutSeconds': input.values['popup.timeoutSeconds'] };
      },
    } as unknown as ReinApi & { on: Subscribe };
    const store = createReinStore(client as ReinClient);
    expect(await store.getState().saveSettings({ 'popup.timeoutSeconds': 2.5 })).toBe(false);
    expect(store.getState().settingErrors).toEqual({ 'popup.timeoutSeconds': 'Invalid input: expected int, received number' });
    expect(store.getState().settingsError).toBeNull();
    expect(await store.getState().saveSettings({ 'popup.timeoutSeconds': 30 })).toBe(true);
    expect(store.getState().settingErrors).toEqual({});
    expect(store.getState().settingSaved).toBe('popup.timeoutSeconds');
    expect(settingMessage('setSettings: publish.ollama.url: Invalid URL', 'publish.ollama')).toBe('url: Invalid URL');
  });
});

describe('the round-time estimate', () => {
  const run = (id: number, over: Partial<RunView> = {}): RunView => ({
    id,
    modelId: 'm',
    status: 'succeeded',
    trigger: 'manual',
    createdAt: 0,
    startedAt: 0,
    finishedAt: 100_000,
    config: { steps: 10, batchSize: 4 },
    metrics: { trainSeconds: 80, steps: Array.from({ length: 10 }, (_, i) => ({ step: i + 1 })) },
    error: null,
    adapterVersion: 1,
    fromVersion: null,
    samples: 32,
    ...over,
  });

  it('comes from measured rounds when there are any: seconds per turn-step × the next round, plus the time around the steps', () => {
    // 80 s / (10 × 4) = 2 s per turn-step; 20 s outside the steps; next round 32 steps × 8 turns.
    const e = roundEstimate({ runs: [run(2), run(1, { status: 'failed', metrics: null })], config: { steps: 32, batchSize: 8 }, timed: { seconds: 7000, steps: 32, heldout: 6 } });
    expect(e).toEqual({ seconds: 2 * 32 * 8 + 20, basis: 'runs', runs: 1, steps: 32, batchSize: 8 });
  });

  it('falls back to the core\'s size estimate for this preset and count (common/training/estimate.test.ts checks the figure), and to nothing when that is unknown', () => {
    const per = (custom: number, others: number) => ({ careful: others, balanced: others, aggressive: others, custom });
    const table = { roundTime: { pending: 32, seconds: { ...per(7860, 1), balanced: 2 }, steps: per(32, 32), heldout: per(6, 6) } } as PresetTable;
    const e = roundEstimate({ runs: [], config: { steps: 32, batchSize: 8 }, timed: timedRound(table, 'custom', 32) });
    expect(e?.basis).toBe('size');
    expect(durationWords(e!.seconds)).toBe('about 2 h 11 min');
    expect(timedRound(table, undefined, 32)?.seconds).toBe(2);
    // An answer for another pending count is not this round's.
    expect(timedRound(table, 'custom', 6)).toBeNull();
    expect(roundEstimate({ runs: [], config: null, timed: null })).toBeNull();
    expect(durationWords(30)).toBe('under a minute');
  });

  it('counts the steps the core says the round will run (enough to draw every trained rating), not the preset\'s', () => {
    const per = (v: number) => ({ careful: v, balanced: v, aggressive: v, custom: v });
    const table = { roundTime: { pending: 200, seconds: per(100), steps: per(20), heldout: per(40) } } as PresetTable;
    expect(roundEstimate({ runs: [], config: { steps: 4, batchSize: 8 }, timed: timedRound(table, 'balanced', 200) })?.steps).toBe(20);
  });

  it("the wizard's preset times come from a measured round once there is one, not from the model's size", () => {
    // The demo model: the size formula says seconds, a measured round took 177 s (157 s of 10 steps × 4 turns).
    const cfg = (steps: number) => ({ steps, batchSize: 4 }) as PresetTable['presets']['balanced'];
    const table = {
      presets: { careful: cfg(10), balanced: cfg(20), aggressive: cfg(40) },
      roundTime: { pending: 32, seconds: { careful: 3, balanced: 5, aggressive: 9, custom: 5 }, steps: { careful: 10, balanced: 20, aggressive: 40, custom: 20 }, heldout: { careful: 6, balanced: 6, aggressive: 6, custom: 6 } },
    } as unknown as PresetTable;
    expect(durationWords(presetEstimates(table, []).balanced!.seconds)).toBe('under a minute');
    const measuredRun = run(1, { finishedAt: 177_000, metrics: { trainSeconds: 157, steps: Array.from({ length: 10 }, (_, i) => ({ step: i + 1 })) } });
    const e = presetEstimates(table, [measuredRun]);
    expect(e.careful).toMatchObject({ basis: 'runs', seconds: 177 });
    expect(durationWords(e.careful!.seconds)).toBe('about 3 min');
    expect(durationWords(e.aggressive!.seconds)).toBe(`about ${Math.round((157 * 4 + 20) / 60)} min`);
  });
});

describe('setting titles', () => {
  it('names every setting in words, never by its raw key alone', async () => {
    const { settingTitle } = await import('../screens/SettingField.tsx');
    const raw = describeSettings().filter((d) => settingTitle(d.key) === d.key).map((d) => d.key);
    expect(raw).toEqual([]);
  });
});

describe('schedule fields', () => {
  it('threshold mode shows no interval or nightly fields; each other mode shows the ones it reads', async () => {
    const { scheduleFieldInUse } = await import('../screens/SettingField.tsx');
    const shown = (mode: string) => ['mode', 'everyMinutes', 'at', 'minPending'].filter((f) => scheduleFieldInUse(mode, f));
    expect(shown('threshold')).toEqual(['mode']);
    expect(shown('interval')).toEqual(['mode', 'everyMinutes', 'minPending']);
    expect(shown('nightly')).toEqual(['mode', 'at', 'minPending']);
  });

});
