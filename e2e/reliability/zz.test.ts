import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'vitest';
import { startServe } from '../harness.ts';
test('p', async () => {
  const s = await startServe();
  for (const mode of ['api', 'claude', 'codex']) {
    const t0 = Date.now();
    const r = spawnSync(process.execPath, [path.join(import.meta.dirname, 'burst-client.mjs'), s.url, s.token, 'x' + mode, mode, '2'], { encoding: 'utf8' });
    const lines = r.stdout.trim().split('\n');
    console.log(mode, Date.now() - t0, lines.length, lines.slice(0, 3).join(' '), lines.at(-1)!.slice(0, 300));
  }
  await s.stop();
}, 60000);
