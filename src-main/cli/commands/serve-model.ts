// `rein serve-model`: the capture proxy on loopback (proxy.port), forwarding to the upstream in proxy.upstream or,
// when that is null, to Rein's own llama.cpp model server with the active adapter. Runs until SIGINT/SIGTERM. It opens
// the store itself (several processes share it), so it works beside a running app or alone.
import { registerCommand } from '../dispatch.ts';
import { intOption } from './format.ts';

registerCommand({
  name: 'serve-model',
  summary: 'Run the OpenAI-compatible capture proxy (and Rein\'s own model server with the active adapter).',
  usage: 'rein serve-model [--port N] [--upstream <url>]',
  description:
    'Point an OpenAI client at http://127.0.0.1:PORT/v1 with the Rein token as its API key. Each answer is stored as a ' +
    'turn; answers of the local model (with the version that produced them known) are stored with their tokens and ' +
    'logprobs, so training can use them on-policy.',
  options: {
    port: { type: 'string', help: 'proxy port (default: the proxy.port setting; 0 picks a free one)' },
    upstream: { type: 'string', help: 'OpenAI base URL to forward to (default: the proxy.upstream setting, else Rein\'s own model server)' },
  },
  async run(ctx) {
    const port = intOption(ctx.options, 'port', 0, 65535);
    const { createCore } = await import('../../node/core/core.ts');
    const { readOrCreateToken } = await import('../../node/home.ts');
    const { startProxyServer } = await import('../../node/serving/proxy.ts');
    const { producerResolver, upstreamModelResolver, vocabResolver } = await import('../../node/serving/producer.ts');
    const log = (line: string) => ctx.io.stderr(line + '\n');
    const core = createCore({ home: ctx.home });
    const token = readOrCreateToken(ctx.home);
    const s = core.settings();
    const upstreamUrl = typeof ctx.options.upstream === 'string' ? ctx.options.upstream : s['proxy.upstream'];
    let model: { url: string; close(): Promise<void> } | null = null;
    if (upstreamUrl === null) {
      const { startModelServer } = await import('../../node/serving/embedded.ts');
      model = await startModelServer({ core, token, port: 0, log });
      log(`rein serve-model: model server at ${model.url}`);
    }
    const upstream = upstreamUrl === null ? { baseUrl: model!.url, apiKey: token, kind: 'rein' as const } : { baseUrl: upstreamUrl, kind: s['proxy.upstreamKind'] };
    const proxy = await startProxyServer({ core, token, port: port ?? s['proxy.port'], upstream: () => upstream, vocab: vocabResolver(core, log), producer: producerResolver(core), upstreamModel: upstreamModelResolver(core), log });
    ctx.print(proxy.url, { url: proxy.url, upstream: upstream.baseUrl, pid: process.pid });
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await proxy.close();
    await model?.close();
    core.close();
    return 0;
  },
});
