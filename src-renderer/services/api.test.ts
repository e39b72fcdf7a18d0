// The transports' pure parts: the SSE parser, error decoding, the token hand-off, and the HTTP client over an
// injected fetch (vitest runs under plain Node; the real server is exercised by the e2e suite).
import { describe, expect, it } from 'vitest';
import { ApiError, createHttpClient, createSseParser, takeToken, toApiError } from './api.ts';

describe('createSseParser', () => {
  it('parses frames split across chunks, joins data lines and drops comments', () => {
    const parse = createSseParser();
    expect(parse('retry: 2000\n: connected\n\nevent: turnCap')).toEqual([]);
    expect(parse('tured\ndata: {"id":1}\n\n: heartbeat\n\nevent: x\r\ndata: a\r\ndata: b\r\n\r\n')).toEqual([
      { event: 'turnCaptured', data: '{"id":1}' },
      { event: 'x', data: 'a\nb' },
    ]);
    expect(parse('data: plain\n\n')).toEqual([{ event: 'message', data: 'plain' }]);
  });
});

describe('toApiError', () => {
  it('reads the code and field from an IPC error message', () => {
    const e = toApiError(new Error(`Error invoking remote method 'rein:call': Error: rein-error:{"code":"not_available","message":"startTraining is not available yet: x"}`));
    expect(e).toBeInstanceOf(ApiError);
    expect(e.code).toBe('not_available');
    expect(e.message).toBe('startTraining is not available yet: x');
    const f = toApiError(new Error('rein-error:{"code":"bad_input","message":"bad","field":"turnId"}'));
    expect(f.field).toBe('turnId');
  });
  it('keeps any other failure as an internal error with its message', () => {
    expect(toApiError(new Error('boom'))).toMatchObject({ code: 'internal', message: 'boom' });
    expect(toApiError('rein-error:{not json')).toMatchObject({ code: 'internal' });
  });
});

function memoryStorage(): Storage {
  const m = new Map<string, string>();
  return {
    get length() {
      return m.size;
    },
    clear: () => m.clear(),
    getItem: (k) => m.get(k) ?? null,
    key: (i) => [...m.keys()][i] ?? null,
    removeItem: (k) => void m.delete(k),
    setItem: (k, v) => void m.set(k, v),
  };
}

describe('takeToken', () => {
  it('moves the token from the fragment to sessionStorage and removes it from the address', () => {
    const storage = memoryStorage();
    const replaced: string[] = [];
    const hist = { replaceState: (_s: unknown, _t: string, url: string) => replaced.push(url) } as unknown as History;
    const loc = { hash: '#token=abc123&view=x', pathname: '/', search: '?q=1' } as Location;
    expect(takeToken(loc, storage, hist)).toBe('abc123');
    expect(storage.getItem('rein.token')).toBe('abc123');
    expect(replaced).toEqual(['/?q=1#view=x']);
    // A reload has no fragment: the stored token is used.
    expect(takeToken({ hash: '', pathname: '/', search: '' } as Location, storage, hist)).toBe('abc123');
    expect(takeToken({ hash: '', pathname: '/', search: '' } as Location, memoryStorage(), hist)).toBeNull();
  });
});

describe('createHttpClient', () => {
  it('posts the verb with the token and returns the JSON body', async () => {
    const seen: { url: string; init: RequestInit }[] = [];
    const client = createHttpClient({
      baseUrl: 'http://127.0.0.1:9/',
      token: 'tok',
      fetch: async (url, init) => {
        seen.push({ url: String(url), init: init! });
        return new Response(JSON.stringify({ ratings: { good: 1 } }), { status: 200 });
      },
    });
    const out = await client.status({});
    expect(out).toEqual({ ratings: { good: 1 } });
    expect(seen[0].url).toBe('http://127.0.0.1:9/api/status');
    expect(seen[0].init.method).toBe('POST');
    expect((seen[0].init.headers as Record<string, string>).authorization).toBe('Bearer tok');
    expect(seen[0].init.body).toBe('{}');
  });

  it('turns an error reply into an ApiError with code, field and status', async () => {
    const client = createHttpClient({
      baseUrl: 'http://127.0.0.1:9',
      token: 'tok',
      fetch: async () => new Response(JSON.stringify({ error: { code: 'bad_input', message: 'turnId: too small', field: 'turnId' } }), { status: 400 }),
    });
    const err = await client.rate({ turnId: 0, value: 'good' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ code: 'bad_input', field: 'turnId', status: 400 });
  });

  it('streams events to subscribers and closes the stream when the last one leaves', async () => {
    let aborted = false;
    const enc = new TextEncoder();
    let push!: (s: string) => void;
    const client = createHttpClient({
      baseUrl: 'http://127.0.0.1:9',
      token: 'tok',
      fetch: async (_url, init) => {
        const body = new ReadableStream<Uint8Array>({
          start(ctrl) {
            push = (s) => ctrl.enqueue(enc.encode(s));
            init?.signal?.addEventListener('abort', () => {
              aborted = true;
              ctrl.error(new DOMException('aborted', 'AbortError'));
            });
          },
        });
        return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
      },
    });
    const got: unknown[] = [];
    const off = client.on('turnCaptured', (t) => got.push(t.id));
    const off2 = client.on('ratingAdded', (r) => got.push(r.rating.id));
    await new Promise((r) => setTimeout(r, 10));
    push(': connected\n\nevent: turnCaptured\ndata: {"id":5}\n\nevent: ratingAdded\ndata: {"rating":{"id":9}}\n\nevent: turnCaptured\nda');
    push('ta: {"id":6}\n\n');
    await new Promise((r) => setTimeout(r, 10));
    expect(got).toEqual([5, 9, 6]);
    off();
    expect(aborted).toBe(false);
    off2();
    expect(aborted).toBe(true);
  });

  it('reports the stream down, retries with backoff, and reports it up again', async () => {
    let attempts = 0;
    const client = createHttpClient({
      baseUrl: 'http://127.0.0.1:9',
      token: 'tok',
      retryMs: 5,
      fetch: async () => {
        attempts++;
        if (attempts <= 2) throw new TypeError('fetch failed');
        return new Response(new ReadableStream<Uint8Array>({ start() {} }), { status: 200 });
      },
    });
    const states: boolean[] = [];
    const offConn = client.onConnection!((up) => states.push(up));
    const off = client.on('turnCaptured', () => {});
    await expect.poll(() => states, { timeout: 2000 }).toEqual([false, true]);
    expect(attempts).toBe(3);
    off();
    offConn();
  });
});
