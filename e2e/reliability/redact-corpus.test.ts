// Redaction measured on a corpus, end to end: each secret form and each look-alike is captured as a turn's prompt by
// the real `rein serve`, and the export is read back. A secret form is missed when any piece of its secret is in the
// export (or no marker stands where it was); a look-alike is a false positive when its text changed. The probe found
// six forms stored in the clear (`x aws_secret_access_key = …`, `my password: … ok`, `run with SECRET_KEY=…`,
// `PRIVATE_KEY=…`, `password is hunter2`, and the tail of `password=Tr0ub4dor&3;`), all in the corpus.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { CLEAN_CASES, SECRET_CASES } from '../../src-main/common/test-utils/redact-corpus.ts';
import { startServe } from '../harness.ts';
import type { ServeChild } from '../harness.ts';
import { figure } from './figures.ts';

let serve: ServeChild;
beforeAll(async () => {
  serve = await startServe();
});
afterAll(async () => {
  await serve.stop();
});

test('the secret corpus leaves nothing in the export, and the look-alikes come back unchanged', async () => {
  const inputs = [...SECRET_CASES.map((c, i) => ({ id: `s${i}`, text: c.text })), ...CLEAN_CASES.map((text, i) => ({ id: `c${i}`, text }))];
  for (const { id, text } of inputs) {
    const r = await serve.post('/v1/turns', { source: 'api', eventId: id, prompt: text, response: 'ok' });
    expect(r.status).toBe(201);
  }
  const file = path.join(serve.home, 'corpus.jsonl');
  await serve.call('exportData', { path: file });
  const prompts = new Map<string, string>();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line === '') continue;
    const rec = JSON.parse(line) as { type: string; eventId?: string; prompt?: string };
    if (rec.type === 'turn') prompts.set(rec.eventId!, rec.prompt!);
  }
  const misses = SECRET_CASES.filter((c, i) => {
    const out = prompts.get(`s${i}`) ?? '';
    return !out.includes('[REDACTED:') || c.pieces.some((p) => out.includes(p));
  });
  const falsePositives = CLEAN_CASES.filter((text, i) => prompts.get(`c${i}`) !== text);
  for (const m of misses) console.log(`missed ${m.name}: ${JSON.stringify(prompts.get(`s${SECRET_CASES.indexOf(m)}`)).slice(0, 200)}`);
  for (const f of falsePositives) console.log(`changed ${JSON.stringify(f).slice(0, 100)} → ${JSON.stringify(prompts.get(`c${CLEAN_CASES.indexOf(f)}`)).slice(0, 160)}`);
  figure(`redaction corpus through rein serve and its export: ${SECRET_CASES.length} secret forms, ${misses.length} missed; ${CLEAN_CASES.length} look-alikes, ${falsePositives.length} changed`);
  expect(prompts.size).toBe(inputs.length);
  expect(SECRET_CASES.length).toBeGreaterThanOrEqual(300);
  expect(misses.map((m) => m.name)).toEqual([]);
  expect(falsePositives).toEqual([]);
});
