// The IPC adapter: one handler for every verb (a one-line call into the core, house style rule 4) and the
// event forwarding to a window. Both validate what crosses the boundary.
import type { IpcMain, IpcMainInvokeEvent, WebContents } from 'electron';
import { EVENT_NAMES, VERB_NAMES } from '../common/api.ts';
import type { VerbName } from '../common/api.ts';
import { BadInputError, ReinError } from '../common/errors.ts';
import { CALL_CHANNEL, ERROR_MARKER, EVENT_CHANNEL } from '../common/ipc.ts';
import type { Core } from '../node/core/types.ts';

const isVerb = (v: unknown): v is VerbName => typeof v === 'string' && (VERB_NAMES as string[]).includes(v);

/**
 * Electron passes only an error's message to the renderer, so a ReinError travels as
 * `rein-error:{"code":...,"message":...}` and the renderer's services turn it back into a typed error.
 */
export function encodeIpcError(e: unknown): Error {
  const err = e instanceof ReinError ? e : new ReinError('internal', e instanceof Error ? e.message : String(e), { cause: e });
  return new Error(ERROR_MARKER + JSON.stringify(err.toBody()));
}

/** Register `rein:call`. `isTrusted` decides which senders may call (only our own windows). Returns a disposer. */
export function registerCallHandler(ipcMain: IpcMain, core: Core, isTrusted: (e: IpcMainInvokeEvent) => boolean): () => void {
  ipcMain.handle(CALL_CHANNEL, async (e, verb: unknown, input: unknown) => {
    try {
      if (!isTrusted(e)) throw new ReinError('forbidden', 'IPC call from a frame that is not a Rein window');
      if (!isVerb(verb)) throw new BadInputError(`unknown verb ${JSON.stringify(verb)}`, 'verb');
      return await core.call(verb, input, 'ipc');
    } catch (err) {
      throw encodeIpcError(err);
    }
  });
  return () => ipcMain.removeHandler(CALL_CHANNEL);
}

/** Forward every core event to one window's renderer. Returns a disposer (called when the window closes). */
export function forwardEvents(core: Core, contents: WebContents): () => void {
  const offs = EVENT_NAMES.map((name) =>
    core.on(name, (payload) => {
      if (!contents.isDestroyed()) contents.send(EVENT_CHANNEL, name, payload);
    }),
  );
  return () => {
    for (const off of offs) off();
  };
}
