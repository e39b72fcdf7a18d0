// `rein serve`: the headless core (capture server, API, events, the built renderer) until SIGINT/SIGTERM.
import { registerCommand } from '../dispatch.ts';
import { intOption, stringOption } from './format.ts';

registerCommand({
  name: 'serve',
  summary: 'Run the core headless: capture server, API and dashboard on 127.0.0.1.',
  usage: 'rein serve [--port N] [--renderer <dir> | --no-ui]',
  options: {
    port: { type: 'string', help: 'listen on this port (default: the server.port setting; 0 picks a free one)' },
    renderer: { type: 'string', help: 'serve the dashboard from this directory (default: out/renderer when built)' },
    'no-ui': { type: 'boolean', help: 'serve the API only' },
    quiet: { type: 'boolean', help: 'do not log rejected requests' },
  },
  async run(ctx) {
    const port = intOption(ctx.options, 'port', 0, 65535);
    const renderer = stringOption(ctx.options, 'renderer');
    const quiet = ctx.options.quiet === true;
    const { runServe } = await import('../../node/headless.ts');
    const serving = await runServe({
      home: ctx.home,
      port,
      rendererDir: ctx.options['no-ui'] ? null : renderer,
      log: (line) => {
        if (!quiet || !line.includes('rejected')) ctx.io.stderr(line + '\n');
      },
    });
    ctx.print(serving.openUrl, { pid: process.pid, port: serving.port, url: serving.url, openUrl: serving.openUrl });
    await serving.closed;
    return 0;
  },
});
