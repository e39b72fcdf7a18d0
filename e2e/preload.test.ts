// The built preload (out/preload/index.cjs) as a sandboxed renderer loads it: CommonJS, with `require` limited to
// 'electron'. electron's contextBridge and ipcRenderer are recorded stand-ins, since the Electron binary cannot run
// here; what runs is the real bundle, so this also proves it needs nothing but 'electron' (else sandbox: true breaks).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import { EVENT_NAMES, VERB_NAMES } from '../src-main/common/api.ts';
import { CALL_CHANNEL, EVENT_CHANNEL } from '../src-main/common/ipc.ts';
import { ROOT } from './harness.ts';

type Listener = (e: unknown, ...args: unknown[]) => void;

function loadPreload() {
  const exposed: Record<string, unknown> = {};
  const invoked: unknown[][] = [];
  const listeners = new Map<string, Set<Listener>>();
  const ipcRenderer = {
    invoke: (...args: unknown[]) => {
      invoked.push(args);
      return Promise.resolve({ ok: args[1] });
    },
    on: (ch: string, fn: Listener) => {
      if (!listeners.has(ch)) listeners.set(ch, new Set());
      listeners.get(ch)!.add(fn);
    },
    removeListener: (ch: string, fn: Listener) => listeners.get(ch)?.delete(fn),
  };
  const electron = {
    ipcRenderer,
    contextBridge: {
      exposeInMainWorld: (key: string, api: unknown) => {
        if (key in exposed) throw new Error(`exposed twice: ${key}`);
        exposed[key] = api;
      },
    },
  };
  const requireSandboxed = (id: string) => {
    if (id === 'electron') return electron;
    throw new Error(`a sandboxed preload cannot require '${id}'`);
  };
  const code = readFileSync(path.join(ROOT, 'out/preload/index.cjs'), 'utf8');
  const module = { exports: {} };
  vm.runInNewContext(`(function (require, module, exports) {${code}\n})`, { console })(requireSandboxed, module, module.exports);
  return { exposed, invoked, listeners, ipcRenderer };
}

describe('the built preload', () => {
  it('exposes exactly one function per verb plus on(), and never ipcRenderer', async () => {
    const { exposed, invoked, ipcRenderer } = loadPreload();
    expect(Object.keys(exposed)).toEqual(['rein']);
    const rein = exposed.rein as Record<string, (...a: unknown[]) => unknown>;
    expect(Object.keys(rein).sort()).toEqual([...VERB_NAMES, 'on'].sort());
    for (const v of Object.values(rein)) {
      expect(typeof v).toBe('function');
      expect(v).not.toBe(ipcRenderer);
    }
    expect(await rein.rate({ turnId: 3, value: 'good' })).toEqual({ ok: 'rate' });
    await rein.status(undefined);
    expect(invoked).toEqual([
      [CALL_CHANNEL, 'rate', { turnId: 3, value: 'good' }],
      [CALL_CHANNEL, 'status', {}],
    ]);
  });

  it('on() delivers only its event and returns a disposer that removes the listener', () => {
    const { exposed, listeners } = loadPreload();
    const rein = exposed.rein as { on: (e: string, fn: (p: unknown) => void) => () => void };
    const got: unknown[] = [];
    const off = rein.on('ratingAdded', (p) => got.push(p));
    const fns = [...(listeners.get(EVENT_CHANNEL) ?? [])];
    expect(fns.length).toBe(1);
    fns[0]({}, 'turnCaptured', { id: 1 });
    fns[0]({}, 'ratingAdded', { rating: { id: 2 } });
    expect(got).toEqual([{ rating: { id: 2 } }]);
    off();
    expect(listeners.get(EVENT_CHANNEL)?.size).toBe(0);
    expect(() => rein.on('noSuchEvent', () => {})).toThrow(/unknown event/);
    expect(EVENT_NAMES.length).toBeGreaterThan(0);
  });
});
