// The provider probe's failure paths on a machine without a GPU adapter. Vulkan is pointed at an ICD file that does
// not exist, so Dawn finds no adapter whatever the machine has (this file runs in its own process: vitest's forks
// pool), and the real probe runs: the WebGPU session fails to create and the CUDA provider's libraries are missing.
// gpu-step.test.ts covers the passing probe and the step's numerics on a (software) adapter.
import { beforeAll, describe, expect, it } from 'vitest';
import { ProviderUnavailableError } from './runtime.ts';
import { adapterName, chooseDevice, maxRelDiff, probeOnce } from './device.ts';

beforeAll(() => {
  process.env['VK_ICD_FILENAMES'] = '/nonexistent/rein-no-vulkan-icd.json';
});

describe('training device choice without a GPU adapter', () => {
  it('auto falls back to the CPU, naming each GPU provider and its probe error', async () => {
    const d = await chooseDevice('auto');
    expect(d.provider).toBe('cpu');
    expect(d.adapter).toBe(adapterName('cpu'));
    expect(d.reason).toMatch(/^no GPU provider passed its probe \(/);
    // Dawn's own words, through ORT's session creation error.
    expect(d.reason).toMatch(/webgpu: .*(adapter|WebGPU)/i);
    expect(d.reason).toMatch(/cuda: /);
  }, 120_000);

  it('an explicit webgpu fails with an error naming the provider and the probe failure, not a crash', async () => {
    const p = chooseDevice('webgpu');
    await expect(p).rejects.toBeInstanceOf(ProviderUnavailableError);
    await expect(p).rejects.toThrow(/execution provider 'webgpu' is not available: its probe failed: .*adapter/i);
    const r = await probeOnce('webgpu');
    expect(r.ok).toBe(false);
    expect(r.maxLogprobDiff).toBeNull();
  }, 120_000);

  it('cpu needs no probe', async () => {
    let probed = 0;
    const d = await chooseDevice('cpu', async (p) => {
      probed++;
      return probeOnce(p);
    });
    expect(d).toEqual({ requested: 'cpu', provider: 'cpu', adapter: adapterName('cpu'), reason: null });
    expect(probed).toBe(0);
  });

  it('compares gradients relative to each tensor\'s scale', () => {
    expect(maxRelDiff([[1, 0.001]], [[1, 0]])).toBeCloseTo(0.001, 9);
    expect(maxRelDiff([[2, 0]], [[1, 0]])).toBe(1);
  });
});
