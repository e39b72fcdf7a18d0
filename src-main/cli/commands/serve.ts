// `rein serve`: the headless core (capture server, API, events, the built renderer) until SIGINT/SIGTERM.
import { registerCommand } from '../dispatch.ts';
import { intOption, stringOption } from './format.ts';

registerCommand({
  name: 'serve',
  summary: 'Run the core headless: capture server, API and dashboard on 127.0.0.1.',
  usage: 'rein serve [--port N] [--renderer <dir> | --no-ui] [--show-url]',
  options: {
    port: { type: 'string', help: 'listen on this port (default: the server.port setting; 0 picks a free one)' },
    renderer: { type: 'string', help: 'serve the dashboard from this directory (default: out/renderer when built)' },
    'no-ui': { type: 'boolean', help: 'serve the API only' },
    quiet: { type: 'boolean', help: 'do not log rejected requests' },
    'show-url': { type: 'boolean', help: 'print the dashboard address with the access token in its fragment (#token=…)' },
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
    // The address carrying the token prints only on request (issue #19): a start line lands in terminals' scrollback,
    // service journals and CI logs. Asked for, it is the fragment form, which a browser never sends to a server.
    if (ctx.options['show-url'] === true) ctx.print(serving.openUrl, { pid: process.pid, port: serving.port, url: serving.url, openUrl: serving.openUrl });
    else ctx.print(`Rein is serving at ${serving.url} (rein serve --show-url prints the address to open, with its access token)`, { pid: process.pid, port: serving.port, url: serving.url });
    await serving.closed;
    return 0;
  },
});
