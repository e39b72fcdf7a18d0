// A child for power-loss.test.ts: writes adapter versions v1, v2, … of a tiny model into a Rein home with the real
// writeVersion (staging directory, then one rename), for ever, until it is killed. Prints "ready" once the first
// version is whole, so the parent kills only while writes are under way. With --once (full-disk.test.ts) it writes one
// version and exits 0, or prints the error and exits 1.
//   node version-writer.ts <home dir> <tiny model dir> [--once]
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fromBase, loraSpec } from '../../src-main/common/engine/lora.ts';
import { modelLinearParams, parseModelConfig } from '../../src-main/common/engine/families/registry.ts';
import { Rng } from '../../src-main/common/engine/rng.ts';
import { resolveHome } from '../../src-main/node/home.ts';
import { nextVersion, writeVersion } from '../../src-main/node/model-files/adapter-versions.ts';

const [homeDir, modelDir, mode] = process.argv.slice(2) as [string, string, string | undefined];
const home = resolveHome({ REIN_HOME: homeDir });
const config = parseModelConfig(JSON.parse(readFileSync(path.join(modelDir, 'config.json'), 'utf8')));
const adapter = fromBase(modelLinearParams(config), loraSpec({ r: 8, alpha: 16 }), 1);
const rng = new Rng(process.pid);
for (const p of adapter.pairs) for (let i = 0; i < p.b.length; i++) p.b[i] = 0.01 * rng.normal();
// No store: nextVersion counts directories, the only record this writer leaves.
const none = { adapters: { maxVersion: () => 0 } } as unknown as Parameters<typeof nextVersion>[0];
if (mode === '--once') {
  try {
    process.stdout.write(writeVersion(home, modelDir, 1, { adapter, baseModel: modelDir, modelConfig: config, metrics: {}, config: {}, lineage: { version: 1 } }) + '\n');
  } catch (e) {
    process.stderr.write(`${(e as Error).name}: ${(e as Error).message}\n`);
    process.exitCode = 1;
  }
} else for (let n = 0; ; n++) {
  const v = nextVersion(none, home, modelDir);
  writeVersion(home, modelDir, v, { adapter, baseModel: modelDir, modelConfig: config, metrics: { n }, config: { r: 8 }, lineage: { version: v } });
  if (n === 0) process.stdout.write('ready\n');
}
