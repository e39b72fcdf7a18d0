import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { presetConfig } from '../../common/training/presets.ts';
import { runCliInProcess } from '../test-utils/rein.ts';
import { parseCount } from './train.ts';

const root = mkdtempSync(path.join(tmpdir(), 'rein-cli-presets-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const rein = (...argv: string[]) => runCliInProcess(root, argv);

describe('rein presets', () => {
  it('lists the three presets in words and numbers, and every custom field', async () => {
    const r = await rein('presets', '--params', '0.5B');
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const b = presetConfig('balanced', { activeParams: 0.5e9, totalParams: 0.5e9, moe: false });
    expect(r.out).toContain('Presets for a small model, 500.0M active parameters (dense)');
    expect(r.out).toContain(`lr ${b.lr.toPrecision(3)}, at least ${b.steps} steps of ${b.batchSize} turns`);
    expect(r.out).toContain('eval gate: 20% of the pending ratings held out (they train next round), KL budget 0.193 nats/token to the parent');
    for (const k of ['careful:', 'balanced:', 'aggressive:', 'custom:', 'ratioClipHigh:', 'gateTurns:', 'heldoutFraction:', 'epochs:']) expect(r.out).toContain(k);
  });

  it('--json gives the table; a MoE shape halves β; a bad count is named', async () => {
    const j = JSON.parse((await rein('presets', '--params', '3e9', '--total', '30e9', '--moe', '--json')).out);
    expect(j.bucket).toBe('medium');
    expect(j.presets.balanced).toEqual(presetConfig('balanced', { activeParams: 3e9, totalParams: 30e9, moe: true }));
    expect(j.presets.balanced.beta).toBe(0.0005);
    const bad = await rein('presets', '--params', 'lots');
    expect(bad.code).not.toBe(0);
    expect(bad.err).toMatch(/--params/);
    expect(parseCount('60k', 'p')).toBe(60e3);
    expect(() => parseCount('0', 'p')).toThrow(/--p/);
  });
});
