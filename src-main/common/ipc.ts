// IPC channel names shared by the Electron main process and the preload: one channel for every verb call
// (`invoke(CALL_CHANNEL, verb, input)`) and one for every event (`send(EVENT_CHANNEL, name, payload)`).
export const CALL_CHANNEL = 'rein:call';
export const EVENT_CHANNEL = 'rein:event';
/**
 * Electron keeps only the message of an error thrown in an `ipcMain.handle` handler (and of one crossing the
 * context bridge), so the main process puts the ErrorBody as JSON after this marker in the message, and the
 * renderer's services read the code and field back from it.
 */
export const ERROR_MARKER = 'rein-error:';
