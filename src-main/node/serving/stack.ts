// The serve-model stack: the capture proxy on loopback, forwarding to the upstream in proxy.upstream or, when that is
// null, to Rein's own llama.cpp model server with the active adapter (embedded.ts). `rein serve-model` runs it until
// a signal; the learning loop (demo/learning.ts) samples through it, so its answers are captured the way
// a user's are. close() stops the proxy, then the model server, and releases both ports.
import type { ReinCore } from '../core/core.ts';
import { startModelServer, type ModelServer } from './embedded.ts';
import { producerResolver, upstreamModelResolver, vocabResolver } from './producer.ts';
import { startProxyServer, type ProxyServer } from './proxy.ts';
import type { Upstream } from './upstream.ts';

export interface ServeStackOptions {
  core: ReinCore;
  token: string;
  /** The proxy's port; 0 picks a free one. */
  port: number;
  /** An OpenAI base URL to forward to in place of the `proxy.upstream` setting. */
  upstream?: string;
  /** The proxy waits this long without a chat in flight before it stores a turn (default: the proxy's). */
  captureQuietMs?: number;
  /** CPU threads of the model server (default: embedded.ts SERVING_THREADS). */
  threads?: number;
  log: (line: string) => void;
}

export interface ServeStack {
  /** The proxy: `http://127.0.0.1:PORT/v1`. */
  readonly url: string;
  readonly upstream: Upstream;
  /** Rein's own model server, when the stack runs one. */
  readonly model: ModelServer | null;
  readonly proxy: ProxyServer;
  close(): Promise<void>;
}

export async function startServeStack(o: ServeStackOptions): Promise<ServeStack> {
  const s = o.core.settings();
  const upstreamUrl = o.upstream ?? s['proxy.upstream'];
  let model: ModelServer | null = null;
  if (upstreamUrl === null) {
    model = await startModelServer({ core: o.core, token: o.token, port: 0, log: o.log, ...(o.threads === undefined ? {} : { threads: o.threads }) });
    o.log(`rein serve-model: model server at ${model.url}`);
  }
  const upstream: Upstream = model !== null ? { baseUrl: model.url, apiKey: o.token, kind: 'rein' } : { baseUrl: upstreamUrl!, kind: s['proxy.upstreamKind'] };
  let proxy: ProxyServer;
  try {
    proxy = await startProxyServer({
      core: o.core,
      token: o.token,
      port: o.port,
      upstream: () => upstream,
      vocab: vocabResolver(o.core, o.log),
      producer: producerResolver(o.core),
      upstreamModel: upstreamModelResolver(o.core),
      ...(o.captureQuietMs === undefined ? {} : { captureQuietMs: o.captureQuietMs }),
      log: o.log,
    });
  } catch (e) {
    await model?.close();
    throw e;
  }
  return {
    url: proxy.url,
    upstream,
    model,
    proxy,
    async close() {
      try {
        await proxy.close();
      } finally {
        await model?.close();
      }
    },
  };
}
