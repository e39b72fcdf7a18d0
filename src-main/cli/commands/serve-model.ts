// `rein serve-model`: the capture proxy on loopback (proxy.port), forwarding to the upstream in proxy.upstream or,
// when that is null, to Rein's own llama.cpp model server with the active adapter (node/serving/stack.ts, which the
// learning loop shares). Runs until SIGINT/SIGTERM. It opens the store itself (several processes share it), so it
// works beside a running app or alone.
import { registerCommand } from '../dispatch.ts';
import { intOption } from './format.ts';

registerCommand({
  name: 'serve-model',
  summary: 'Run the OpenAI-compatible capture proxy (and Rein\'s own model server with the active adapter).',
  usage: 'rein serve-model [--port N] [--upstream <url>]',
  description:
    'Point an OpenAI client at http://127.0.0.1:PORT/v1 with the Rein token as its API key. Each answer is stored as a ' +
    'turn; answers of the local model (with the version that produced them known) are stored with their tokens and ' +
    'logprobs, so training can use them on-policy. The model, upstream, context size (serving.contextSize) and port are read ' +
    'at start: after changing them, restart it (the CLI says so when one is running).',
  options: {
    port: { type: 'string', help: 'proxy port (default: the proxy.port setting; 0 picks a free one)' },
    upstream: { type: 'string', help: 'OpenAI base URL to forward to (default: the proxy.upstream setting, else Rein\'s own model server)' },
  },
  async run(ctx) {
    const port = intOption(ctx.options, 'port', 0, 65535);
    const { composeCore } = await import('../../node/compose.ts');
    const { readOrCreateToken } = await import('../../node/home.ts');
    const { startServeStack } = await import('../../node/serving/stack.ts');
    const log = (line: string) => ctx.io.stderr(line + '\n');
    const { removeServeModelInfo, servedSettings, writeServeModelInfo } = await import('../../node/serving/serve-model-info.ts');
    const core = composeCore({ home: ctx.home });
    try {
      // What the stack starts with (embedded.ts and stack.ts read them once).
      const settings = core.settings();
      const stack = await startServeStack({
        core,
        token: readOrCreateToken(ctx.home),
        port: port ?? settings['proxy.port'],
        ...(typeof ctx.options.upstream === 'string' ? { upstream: ctx.options.upstream } : {}),
        log,
      });
      // Read by the CLI to say when a setting changed since needs a restart of this process.
      if (stack.model !== null) log(`rein serve-model: ${settings['model.active'] ?? 'no model'} with a context of ${settings['serving.contextSize']} tokens (serving.contextSize, read once at start)`);
      // A flag in place of a setting is left out: changing that setting changes nothing here.
      const served: Record<string, unknown> = servedSettings(settings);
      if (port !== undefined) delete served['proxy.port'];
      if (typeof ctx.options.upstream === 'string') delete served['proxy.upstream'];
      writeServeModelInfo(ctx.home, { pid: process.pid, url: stack.url, startedAt: Date.now(), settings: served });
      try {
        ctx.print(stack.url, { url: stack.url, upstream: stack.upstream.baseUrl, pid: process.pid });
        await new Promise<void>((resolve) => {
          process.once('SIGINT', resolve);
          process.once('SIGTERM', resolve);
        });
      } finally {
        removeServeModelInfo(ctx.home);
        await stack.close();
      }
    } finally {
      core.close();
    }
    return 0;
  },
});
