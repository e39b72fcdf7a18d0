// The renderer's one way to reach the core, whatever the transport: the preload's `window.rein` inside
// Electron (IPC), or HTTP + Server-Sent Events against `rein serve` in a browser (headless mode, e2e).
// Only types come from src-main/common: the renderer bundles none of the core's code.
import type { EventName, ReinApi, Subscribe, VerbName } from '../../src-main/common/api.ts';
import type { ErrorBody, ErrorCode } from '../../src-main/common/errors.ts';
import type { ERROR_MARKER } from '../../src-main/common/ipc.ts';

/** The verbs plus event subscription, as both transports provide them. */
export type ReinClient = ReinApi & {
  on: Subscribe;
  /**
   * Told when the event stream drops (false) and when it is back (true), so the caller can say so and reload what
   * it missed. Only the HTTP transport has it: IPC cannot drop while the window lives.
   */
  onConnection?: (fn: (up: boolean) => void) => () => void;
};
export type Transport = 'ipc' | 'http';

/** A failed call, with the core's error code (e.g. `not_available`) and the field it names, if any. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly field: string | undefined;
  readonly status: number | undefined;
  constructor(body: ErrorBody, status?: number) {
    super(body.message);
    this.name = 'ApiError';
    this.code = body.code;
    this.field = body.field;
    this.status = status;
  }
}

// Must equal ERROR_MARKER in common/ipc.ts: the type annotation makes tsc check that.
const MARKER: typeof ERROR_MARKER = 'rein-error:';
const TOKEN_KEY = 'rein.token';

/** Normalise anything a call threw into an ApiError (IPC errors carry the ErrorBody after MARKER). */
export function toApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  const message = e instanceof Error ? e.message : String(e);
  const at = message.indexOf(MARKER);
  if (at >= 0) {
    try {
      const body = JSON.parse(message.slice(at + MARKER.length)) as ErrorBody;
      if (typeof body.code === 'string' && typeof body.message === 'string') return new ApiError(body);
    } catch {
      // Not our JSON after all: fall through to an internal error that keeps the original message.
    }
  }
  return new ApiError({ code: 'internal', message });
}

/**
 * The token for the HTTP transport: taken from `#token=...` in the URL the server printed, kept in
 * sessionStorage (so a reload still works) and removed from the address bar and history.
 */
export function takeToken(loc: Location = location, storage: Storage = sessionStorage, hist: History = history): string | null {
  const params = new URLSearchParams(loc.hash.replace(/^#/, ''));
  const fromHash = params.get('token');
  if (fromHash) {
    storage.setItem(TOKEN_KEY, fromHash);
    params.delete('token');
    const rest = params.toString();
    hist.replaceState(null, '', loc.pathname + loc.search + (rest ? `#${rest}` : ''));
    return fromHash;
  }
  return storage.getItem(TOKEN_KEY);
}

export interface HttpOptions {
  baseUrl: string;
  token: string;
  fetch?: typeof fetch;
  /** First delay before reconnecting the event stream after it drops (ms); it doubles up to 30 s while down. */
  retryMs?: number;
}

/** One SSE frame parsed out of the stream (https://html.spec.whatwg.org/multipage/server-sent-events.html). */
export interface SseFrame {
  event: string;
  data: string;
}

/**
 * Incremental SSE parser: feed it text chunks, get complete frames back. Comment lines (heartbeats) are
 * dropped; multi-line `data:` fields are joined with newlines; a frame without `event:` is a `message`.
 */
export function createSseParser(): (chunk: string) => SseFrame[] {
  let buffer = '';
  return (chunk) => {
    buffer += chunk.replace(/\r\n?/g, '\n');
    const frames: SseFrame[] = [];
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line === '' || line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') event = value;
        else if (field === 'data') data.push(value);
      }
      if (data.length > 0) frames.push({ event, data: data.join('\n') });
    }
    return frames;
  };
}

type Listener = (payload: unknown) => void;

/** The HTTP transport: `POST /api/<verb>` with the token, and one shared `GET /api/events` stream. */
export function createHttpClient(opts: HttpOptions): ReinClient {
  const doFetch = opts.fetch ?? fetch.bind(globalThis);
  const base = opts.baseUrl.replace(/\/$/, '');
  const headers = { authorization: `Bearer ${opts.token}` };
  const listeners = new Map<string, Set<Listener>>();
  const connectionListeners = new Set<(up: boolean) => void>();
  const firstDelay = opts.retryMs ?? 1000;
  let delay = firstDelay;
  let down = false;
  const setUp = (up: boolean) => {
    if (down === !up) return;
    down = !up;
    for (const fn of [...connectionListeners]) fn(up);
  };
  let stream: AbortController | null = null;
  let retry: ReturnType<typeof setTimeout> | null = null;

  async function call(verb: VerbName, input: unknown): Promise<unknown> {
    let res: Response;
    try {
      res = await doFetch(`${base}/api/${verb}`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify(input ?? {}),
      });
    } catch (e) {
      throw new ApiError({ code: 'internal', message: `cannot reach Rein at ${base}: ${(e as Error).message}` });
    }
    const text = await res.text();
    let body: unknown;
    try {
      body = text.length > 0 ? JSON.parse(text) : null;
    } catch {
      throw new ApiError({ code: 'internal', message: `${verb}: the server answered ${res.status} with non-JSON` }, res.status);
    }
    if (!res.ok) {
      const err = (body as { error?: ErrorBody } | null)?.error;
      throw new ApiError(err ?? { code: 'internal', message: `${verb}: HTTP ${res.status}` }, res.status);
    }
    return body;
  }

  function dispatch(frame: SseFrame): void {
    const set = listeners.get(frame.event);
    if (!set || set.size === 0) return;
    let payload: unknown;
    try {
      payload = JSON.parse(frame.data);
    } catch {
      console.warn(`rein: dropped an event '${frame.event}' whose data is not JSON`);
      return;
    }
    for (const fn of [...set]) fn(payload);
  }

  async function runStream(ctrl: AbortController): Promise<void> {
    const res = await doFetch(`${base}/api/events`, { headers: { ...headers, accept: 'text/event-stream' }, signal: ctrl.signal });
    if (!res.ok || !res.body) throw new Error(`events: HTTP ${res.status}`);
    delay = firstDelay;
    setUp(true);
    const parse = createSseParser();
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      for (const frame of parse(value)) dispatch(frame);
    }
  }

  function ensureStream(): void {
    if (stream || retry) return;
    const ctrl = new AbortController();
    stream = ctrl;
    runStream(ctrl)
      .catch((e: unknown) => {
        if (!ctrl.signal.aborted && !down) console.warn(`rein: event stream dropped: ${(e as Error).message}`);
      })
      .finally(() => {
        if (stream === ctrl) stream = null;
        if (ctrl.signal.aborted || !hasListeners()) return;
        // Reconnect with backoff while anyone listens; what was missed meanwhile is reloaded on the way back up.
        setUp(false);
        retry = setTimeout(() => {
          retry = null;
          if (hasListeners()) ensureStream();
        }, delay);
        delay = Math.min(delay * 2, 30_000);
      });
  }

  function hasListeners(): boolean {
    for (const set of listeners.values()) if (set.size > 0) return true;
    return false;
  }

  function stopIfIdle(): void {
    if (hasListeners()) return;
    stream?.abort();
    stream = null;
    if (retry) clearTimeout(retry);
    retry = null;
  }

  const on = ((event: EventName, fn: Listener) => {
    let set = listeners.get(event);
    if (!set) listeners.set(event, (set = new Set()));
    set.add(fn);
    ensureStream();
    return () => {
      set.delete(fn);
      stopIfIdle();
    };
  }) as Subscribe;

  const verbs = new Proxy({} as ReinApi, {
    get: (_t, verb) => (typeof verb === 'string' ? (input: unknown) => call(verb as VerbName, input) : undefined),
  });
  const onConnection = (fn: (up: boolean) => void) => {
    connectionListeners.add(fn);
    return () => {
      connectionListeners.delete(fn);
    };
  };
  return new Proxy({ on, onConnection } as ReinClient, {
    get: (t, key) => (key === 'on' || key === 'onConnection' ? t[key] : Reflect.get(verbs, key)),
  });
}

/** Wrap the preload's bridge so that every failure surfaces as an ApiError with its code. */
export function createIpcClient(bridge: ReinClient): ReinClient {
  return new Proxy({} as ReinClient, {
    get: (_t, key) => {
      if (key === 'on') return bridge.on;
      if (typeof key !== 'string') return undefined;
      return (input: unknown) =>
        (bridge[key as VerbName] as (i: unknown) => Promise<unknown>)(input ?? {}).catch((e: unknown) => {
          throw toApiError(e);
        });
    },
  });
}

/** Pick the transport: IPC when the preload ran (Electron), otherwise HTTP to the server that served this page. */
export function connect(): { client: ReinClient; transport: Transport } | { error: string } {
  if (window.rein) return { client: createIpcClient(window.rein), transport: 'ipc' };
  const token = takeToken();
  if (!token) {
    return { error: 'No access token. Open the address that `rein serve` printed (it ends in #token=…).' };
  }
  return { client: createHttpClient({ baseUrl: location.origin, token }), transport: 'http' };
}

