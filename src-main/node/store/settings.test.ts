// The one reading of settings: a stored value that does not validate (an older Rein wrote it, or a hand edit) reads as
// its default with one warning naming the key and the value, for the core and for the training round in its worker.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { defaultSettings } from '../../common/config.ts';
import { presetConfig } from '../../common/training/presets.ts';
import { createCore } from '../core/core.ts';
import { resolveHome } from '../home.ts';
import { SMALL_LM_DIR } from '../demo/small-lm.ts';
import { modelShape } from '../model-files/base-model.ts';
import { readSettings } from './settings.ts';
import { Store } from './store.ts';

const root = mkdtempSync(path.join(os.tmpdir(), 'rein-settings-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
afterEach(() => vi.restoreAllMocks());

function stderrLines(): { lines: string[] } {
  const out = { lines: [] as string[] };
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out.lines.push(String(chunk));
    return true;
  });
  return out;
}

describe('readSettings', () => {
  it('validates every stored value: an invalid one reads as its default, with one warning naming the key and the value', () => {
    const store = new Store(path.join(root, 'unit.db'));
    try {
      // store.writeSettings stores raw JSON, as a hand edit or an older Rein would; the core's setSettings validates.
      store.writeSettings({ 'training.threshold': -5, 'training.preset': 'turbo', 'training.replayRatio': 0.5, 'some.removedKey': 1 }, 'test');
      const err = stderrLines();
      const s = readSettings(store);
      const d = defaultSettings();
      expect(s['training.threshold']).toBe(d['training.threshold']);
      expect(s['training.preset']).toBe(d['training.preset']);
      expect(s['training.replayRatio']).toBe(0.5);
      expect(err.lines).toHaveLength(2);
      expect(err.lines.find((l) => l.includes('training.threshold'))).toMatch(/setting training\.threshold has an invalid stored value -5 .*using the default 32/);
      expect(err.lines.find((l) => l.includes('training.preset'))).toMatch(/setting training\.preset has an invalid stored value "turbo" .*using the default "balanced"/);
      // Once per key and value: settings are read on every status call.
      readSettings(store);
      expect(err.lines).toHaveLength(2);
      store.writeSettings({ 'training.threshold': 0 }, 'test');
      readSettings(store);
      expect(err.lines).toHaveLength(3);
      expect(err.lines[2]).toMatch(/training\.threshold has an invalid stored value 0/);
      // A custom preset saved by an earlier build with the retired heldoutFraction keeps its other fields, unwarned.
      store.writeSettings({ 'training.custom': { steps: 7, heldoutFraction: 0.15 } }, 'test');
      expect(readSettings(store)['training.custom']).toEqual({ steps: 7 });
      expect(err.lines).toHaveLength(3);
    } finally {
      store.close();
    }
  });

  it('the round reads through it: a stored preset that no longer exists trains with the default preset instead of failing', { timeout: 120_000 }, async () => {
    const modelDir = SMALL_LM_DIR;
    const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'round') }) });
    try {
      await core.call('setSettings', { values: { 'model.active': modelDir, 'training.auto': false } }, 'test');
      core.store.writeSettings({ 'training.preset': 'turbo' }, 'test');
      stderrLines();
      for (const [i, value] of (['good', 'bad', 'good', 'bad'] as const).entries()) {
        const { turn } = await core.call('captureTurn', { source: 'api', eventId: `t${i}`, prompt: 'fix the bug', response: i % 2 === 0 ? 'done' : 'no' }, 'test');
        await core.call('rate', { turnId: turn!.id, value }, 'test');
      }
      await core.call('startTraining', {}, 'test');
      await core.scheduler.idle();
      const run = (await core.call('listRuns', {}, 'test'))[0]!;
      expect(run.status, String(run.error)).toBe('succeeded');
      expect(run.config).toEqual(presetConfig('balanced', modelShape(modelDir)));
    } finally {
      core.close();
    }
  });
});
