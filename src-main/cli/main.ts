// The `rein` command. bin/rein.mjs makes sure this runs on Node 24, then imports it.
import './commands/index.ts';
import { runCli } from './dispatch.ts';

const code = await runCli(process.argv.slice(2), {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  stdin: process.stdin,
  stdinIsTTY: process.stdin.isTTY === true,
  env: process.env,
  cwd: process.cwd(),
});
process.exit(code);
