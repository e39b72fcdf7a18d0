// The IPC adapter against the real core on a temp home. Electron itself cannot run here (no binary), so ipcMain and
// WebContents are small stand-ins with the same methods; the adapter code under test is the one the app runs.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { IpcMain, IpcMainInvokeEvent, WebContents } from 'electron';
import { afterEach, describe, expect, it } from 'vitest';
import { EVENT_NAMES } from '../common/api.ts';
import { CALL_CHANNEL, ERROR_MARKER, EVENT_CHANNEL } from '../common/ipc.ts';
import { createCore } from '../node/core/core.ts';
import type { ReinCore } from '../node/core/core.ts';
import { resolveHome } from '../node/home.ts';
import { encodeIpcError, forwardEvents, registerCallHandler } from './ipc.ts';

type Handler = (e: IpcMainInvokeEvent, ...args: unknown[]) => Promise<unknown>;

function fakeIpcMain() {
  const handlers = new Map<string, Handler>();
  const ipc = {
    handle: (ch: string, fn: Handler) => {
      if (handlers.has(ch)) throw new Error(`second handler for ${ch}`);
      handlers.set(ch, fn);
    },
    removeHandler: (ch: string) => handlers.delete(ch),
  } as unknown as IpcMain;
  const invoke = (trusted: boolean, ...args: unknown[]) => handlers.get(CALL_CHANNEL)!({ trusted } as unknown as IpcMainInvokeEvent, ...args);
  return { ipc, handlers, invoke };
}

function decode(e: unknown): { code: string; message: string; field?: string } {
  const msg = (e as Error).message;
  expect(msg.startsWith(ERROR_MARKER)).toBe(true);
  return JSON.parse(msg.slice(ERROR_MARKER.length));
}

const cleanup: (() => void)[] = [];
afterEach(() => {
  for (const f of cleanup.splice(0).reverse()) f();
});

function newCore(): ReinCore {
  const dir = mkdtempSync(path.join(tmpdir(), 'rein-ipc-'));
  const core = createCore({ home: resolveHome({ REIN_HOME: dir }) });
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  cleanup.push(() => {
    expect(core.listenerCount()).toBe(0);
    core.close();
  });
  return core;
}

describe('rein:call', () => {
  it('runs a verb in the core and returns its output', async () => {
    const core = newCore();
    const { ipc, invoke, handlers } = fakeIpcMain();
    const off = registerCallHandler(ipc, core, (e) => (e as unknown as { trusted: boolean }).trusted);
    const captured = (await invoke(true, 'captureTurn', { source: 'api', eventId: 'x1', prompt: 'p', response: 'r' })) as { created: boolean; turn: { id: number } };
    expect(captured.created).toBe(true);
    const rated = (await invoke(true, 'rate', { turnId: captured.turn.id, value: 'good' })) as { status: { ratings: { good: number } } };
    expect(rated.status.ratings.good).toBe(1);
    off();
    expect(handlers.size).toBe(0);
  });

  it('refuses unknown verbs, untrusted senders and bad input with a typed error', async () => {
    const core = newCore();
    const { ipc, invoke } = fakeIpcMain();
    registerCallHandler(ipc, core, (e) => (e as unknown as { trusted: boolean }).trusted);
    expect(decode(await invoke(true, 'constructor', {}).catch((e: unknown) => e))).toMatchObject({ code: 'bad_input', field: 'verb' });
    expect(decode(await invoke(false, 'status', {}).catch((e: unknown) => e))).toMatchObject({ code: 'forbidden' });
    expect(decode(await invoke(true, 'rate', { turnId: -1, value: 'good' }).catch((e: unknown) => e))).toMatchObject({ code: 'bad_input', field: 'turnId' });
    expect(decode(await invoke(true, 'startTraining', {}).catch((e: unknown) => e))).toMatchObject({ code: 'not_available' });
  });

  it('an unexpected error keeps its message as an internal error', () => {
    expect(decode(encodeIpcError(new TypeError('boom')))).toEqual({ code: 'internal', message: 'boom' });
  });
});

describe('event forwarding', () => {
  it('sends every core event to the window and stops when disposed', async () => {
    const core = newCore();
    const sent: unknown[][] = [];
    let destroyed = false;
    const contents = { send: (...a: unknown[]) => sent.push(a), isDestroyed: () => destroyed } as unknown as WebContents;
    const before = core.listenerCount();
    const off = forwardEvents(core, contents);
    expect(core.listenerCount()).toBe(before + EVENT_NAMES.length);

    const { turn } = await core.call('captureTurn', { source: 'api', eventId: 'e1', prompt: 'p', response: 'r' }, 'test');
    await core.call('rate', { turnId: turn!.id, value: 'bad' }, 'test');
    expect(sent.every((a) => a[0] === EVENT_CHANNEL)).toBe(true);
    const names = sent.map((a) => a[1]);
    expect(names[0]).toBe('turnCaptured');
    expect(names).toContain('ratingAdded');
    const added = sent.find((a) => a[1] === 'ratingAdded')!;
    expect((added[2] as { rating: { kind: string } }).rating.kind).toBe('bad');
    const count = sent.length;

    // A destroyed window is skipped rather than sent to (Electron throws on a destroyed WebContents).
    destroyed = true;
    await core.call('captureTurn', { source: 'api', eventId: 'e2', prompt: 'p', response: 'r' }, 'test');
    expect(sent.length).toBe(count);
    off();
    expect(core.listenerCount()).toBe(before);
  });
});
