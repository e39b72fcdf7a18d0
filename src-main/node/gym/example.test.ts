// The doc's runnable example (scripts/gym-example.ts) runs as a user runs it: through the package's `rein/gym` export,
// a fresh Rein home, one training round judged by the env gate, and the held-out evaluation next to basic strategy.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

it('scripts/gym-example.ts trains a round judged by the env gate and reports the held-out win rates', () => {
  const r = spawnSync(process.execPath, ['scripts/gym-example.ts', 'episodes=16'], { cwd: root, encoding: 'utf8', timeout: 300_000 });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  expect(r.stdout).toMatch(/^round 1: v1 (active|rejected) \(mean return .* on 100 held-out blackjack episodes/m);
  const m = /win rate on 200 held-out hands: agent (\d\.\d{3}), basic strategy (\d\.\d{3}); unreadable replies (\d+)/.exec(r.stdout);
  expect(m).not.toBeNull();
  // Basic strategy on the first 200 held-out seeds (evaluate.ts heldOutSeeds), the same hands whatever the agent does.
  expect(m![2]).toBe('0.410');
}, 330_000);
