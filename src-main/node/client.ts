// An HTTP client for the API of a running core: the CLI's transport, and the tests' and benchmark's. Verbs go to
// `POST /api/<verb>`, events come from `GET /api/events` (SSE); an error reply becomes the same ReinError the core threw.
import type { EventName, VerbInput, VerbName, VerbOutput } from '../common/api.ts';
import { errorFromBody, ReinError } from '../common/errors.ts';
import type { ErrorBody } from '../common/errors.ts';
import { readOrCreateToken } from './home.ts';
import type { ReinHome } from './home.ts';
import { readServerInfo } from './capture-server/info.ts';

/** Nothing answered at the recorded address (the core stopped or crashed): callers may fall back to the store. */
export class ConnectionError extends ReinError {
  constructor(url: string, cause: unknown) {
    super('not_available', `no Rein core answers at ${url}: ${(cause as Error)?.message ?? String(cause)}`, { cause, detail: { url } });
    this.name = 'ConnectionError';
  }
}

export interface HttpClient {
  readonly url: string;
  call<V extends VerbName>(verb: V, input: VerbInput<V>): Promise<VerbOutput<V>>;
  health(): Promise<{ ok: boolean; version: string }>;
  /** Read the event stream until `signal` aborts or the server ends it; `onOpen` once the stream is connected. */
  events(onEvent: (name: EventName, payload: unknown) => void, signal: AbortSignal, onOpen?: () => void): Promise<void>;
}

export function createHttpClient(opts: { url: string; token: string; timeoutMs?: number }): HttpClient {
  const base = opts.url.endsWith('/') ? opts.url : opts.url + '/';
  const auth = { authorization: `Bearer ${opts.token}` };
  const timeoutMs = opts.timeoutMs ?? 120_000;

  async function send(pathname: string, init: RequestInit): Promise<Response> {
    try {
      return await fetch(new URL(pathname, base), init);
    } catch (e) {
      if ((e as Error).name === 'AbortError' || (e as Error).name === 'TimeoutError') throw e;
      throw new ConnectionError(base, (e as { cause?: unknown }).cause ?? e);
    }
  }

  async function parse(res: Response): Promise<unknown> {
    const text = await res.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new ReinError('internal', `the server answered ${res.status} with a body that is not JSON: ${text.slice(0, 200)}`);
    }
    if (!res.ok) {
      const err = (body as { error?: ErrorBody }).error;
      if (err && typeof err.code === 'string') throw errorFromBody(err);
      throw new ReinError('internal', `the server answered ${res.status}`);
    }
    return body;
  }

  return {
    url: base,
    async call(verb, input) {
      const res = await send(`api/${verb}`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify(input ?? {}),
        signal: AbortSignal.timeout(timeoutMs),
      });
      return (await parse(res)) as never;
    },
    async health() {
      return (await parse(await send('api/health', { signal: AbortSignal.timeout(timeoutMs) }))) as { ok: boolean; version: string };
    },
    async events(onEvent, signal, onOpen) {
      const res = await send('api/events', { headers: auth, signal });
      if (!res.ok || !res.body) {
        await parse(res);
        return;
      }
      onOpen?.();
      const decoder = new TextDecoder();
      let buf = '';
      try {
        for await (const chunk of res.body) {
          buf += decoder.decode(chunk as Uint8Array, { stream: true });
          let end: number;
          while ((end = buf.indexOf('\n\n')) >= 0) {
            const frame = buf.slice(0, end);
            buf = buf.slice(end + 2);
            let name: string | null = null;
            const data: string[] = [];
            for (const line of frame.split('\n')) {
              if (line.startsWith('event: ')) name = line.slice(7);
              else if (line.startsWith('data: ')) data.push(line.slice(6));
            }
            if (name !== null && data.length > 0) onEvent(name as EventName, JSON.parse(data.join('\n')));
          }
        }
      } catch (e) {
        if (!signal.aborted) throw e;
      }
    },
  };
}

/** A client for the core running on this home, or null when none runs (no server.json, or its pid is gone). */
export function connectRunning(home: ReinHome): HttpClient | null {
  const info = readServerInfo(home);
  if (info === null) return null;
  return createHttpClient({ url: info.url, token: readOrCreateToken(home) });
}
