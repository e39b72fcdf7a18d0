// A separate process for the concurrency test: opens its own Core on a shared home and captures and rates
// `count` turns as fast as it can, the way the app, the CLI and hooks write the same database at once.
// Usage: node concurrency-child.ts <home> <worker> <count> <startAtMs>
import { resolveHome } from '../../home.ts';
import { createCore } from '../core.ts';

const [home, worker, count, startAt] = process.argv.slice(2);
const core = createCore({ home: resolveHome({ REIN_HOME: home }) });
// Spin until the shared start time so that all workers write at the same moment.
while (Date.now() < Number(startAt)) {
  /* wait */
}
let rated = 0;
const errors: string[] = [];
for (let i = 0; i < Number(count); i++) {
  try {
    await core.call(
      'captureTurn',
      { source: 'api', session: `w${worker}`, eventId: `w${worker}-${i}`, prompt: `p${i}`, response: `r${i}` },
      'hook',
    );
    await core.call('rate', { session: `w${worker}`, value: i % 3 === 0 ? 'bad' : 'good' }, 'cli');
    rated++;
  } catch (e) {
    errors.push(String(e));
  }
}
core.close();
process.stdout.write(JSON.stringify({ worker: Number(worker), rated, errors }) + '\n');
process.exit(errors.length === 0 ? 0 : 1);
