// Issue #21 item 9: the probe found nine secret formats that reached the database as they were, and six fields that
// were never redacted at all (session, eventId, model, context keys, tags, rater). Each is sent to the real
// `rein serve` here; the export of everything it stored must hold none of the secrets, and each must have left a
// marker where it was.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startServe } from '../harness.ts';
import type { ServeChild } from '../harness.ts';

// Fake secrets (random characters), each with the part that must not survive.
const FORMATS: [string, string, string][] = [
  ['empty URL user', 'REDIS_URL=redis://:Zq8rT2vLpx@cache:6379', 'Zq8rT2vLpx'],
  ['/ in a URL password', 'curl https://u:pa/Kx93mWq@h.example/x', 'Kx93mWq'],
  ['@ in a URL password', 'mongodb://app:p@ssw0rd@db1.internal/app', 'ssw0rd'],
  ['INI aws_secret_access_key', '[default]\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYQq7Lm2\n', 'bPxRfiCYQq7Lm2'],
  ['X-Api-Key header', 'curl -H "X-Api-Key: 9f8e7d6c5b4a3928aa" https://api.example.com', '9f8e7d6c5b4a3928aa'],
  ['YAML password', 'db:\n  password: Hunt3r-Tw0-Xy\n', 'Hunt3r-Tw0-Xy'],
  ['--password flag', 'mysql -u root --password Qw3rtyUi0p app', 'Qw3rtyUi0p'],
  ['PGPASSWORD=', 'PGPASSWORD=Pg5ecretVal psql -h db', 'Pg5ecretVal'],
  ['Stripe sk_live_', 'stripe.api_key = sk_live_4eC39HqLyjWDarjtT1zdp7dc', '4eC39HqLyjWDarjtT1zdp7dc'],
];
const KEY = 'sk-proj-4fQ9xZ2mLw8RtY1uVb7NcK3pHs6DgJ0a';
const LEAK = '4fQ9xZ2mLw8R';

let serve: ServeChild;
beforeAll(async () => {
  serve = await startServe();
});
afterAll(async () => {
  await serve.stop();
});

test('no secret format and no free-text field reaches the database unredacted', async () => {
  const session = `chat-${KEY}`;
  const capture = await serve.post('/v1/turns', {
    source: 'api',
    session,
    eventId: `ev-${KEY}`,
    model: `gpt?key=${KEY}`,
    prompt: FORMATS.map(([, text]) => text).join('\n'),
    response: FORMATS.map(([, text]) => text).join('\n'),
    context: [{ role: 'tool', content: 'ok', [`x-${KEY}`]: { note: `uses ${KEY}` } }],
  });
  expect(capture.status).toBe(201);
  // Rated by the session as the hook knows it.
  const rated = await serve.post('/api/rate', { session, value: 'good', tags: [`t-${KEY}`], rater: `bot-${KEY}`, comment: `c ${KEY}` });
  expect(rated.status).toBe(200);

  const file = path.join(serve.home, 'all.jsonl');
  await serve.call('exportData', { path: file });
  const stored = readFileSync(file, 'utf8');
  const leaked = FORMATS.filter(([, , secret]) => stored.includes(secret)).map(([name]) => name);
  if (stored.includes(LEAK)) leaked.push('a field (session, eventId, model, context key, tag, rater or comment)');
  const markers = stored.match(/\[REDACTED:[a-z_]+\]/g) ?? [];
  console.log(`stored export: ${stored.length} bytes, ${markers.length} markers; leaked: ${leaked.length === 0 ? 'nothing' : leaked.join('; ')}`);
  expect(leaked).toEqual([]);
  const turn = stored.split('\n').map((l) => JSON.parse(l || 'null') as Record<string, unknown> | null).find((r) => r?.type === 'turn')!;
  expect(turn).toMatchObject({ session: 'chat-[REDACTED:openai_key]', eventId: 'ev-[REDACTED:openai_key]', model: 'gpt?key=[REDACTED:openai_key]' });
});
