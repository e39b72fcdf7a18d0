// The preload exposes the typed verbs and event subscription, never ipcRenderer itself (house style rule 3).
// It runs sandboxed with context isolation, and is bundled to CommonJS by electron.vite.config.ts.
import { contextBridge, ipcRenderer } from 'electron';
import type { IpcRendererEvent } from 'electron';
import { EVENT_NAMES, VERB_NAMES } from '../src-main/common/api.ts';
import type { EventName, ReinApi, Subscribe } from '../src-main/common/api.ts';
import { CALL_CHANNEL, EVENT_CHANNEL } from '../src-main/common/ipc.ts';

export interface PreloadApi extends ReinApi {
  on: Subscribe;
}

const verbs = Object.fromEntries(
  VERB_NAMES.map((verb) => [verb, (input: unknown) => ipcRenderer.invoke(CALL_CHANNEL, verb, input ?? {})]),
) as unknown as ReinApi;

const on: Subscribe = (event, fn) => {
  if (!(EVENT_NAMES as string[]).includes(event)) throw new TypeError(`unknown event '${String(event)}'`);
  const listener = (_e: IpcRendererEvent, name: EventName, payload: unknown) => {
    if (name === event) fn(payload as never);
  };
  ipcRenderer.on(EVENT_CHANNEL, listener);
  return () => {
    ipcRenderer.removeListener(EVENT_CHANNEL, listener);
  };
};

const api: PreloadApi = { ...verbs, on };
contextBridge.exposeInMainWorld('rein', api);
