// One client process of the kill -9 and concurrent-writer tests (burst.test.ts): it writes to `rein serve` over HTTP
// until its time is up, as an agent's hooks or an API caller do, and reports each acknowledged (2xx) write on stdout
// the moment it is answered, one JSON line each, so that what the server acknowledged is known even if it dies.
//   node burst-client.mjs <url> <token> <client id> <mode: api|claude|codex> <seconds>
/* global AbortSignal -- Node 24 has it; the lint config lists no globals for .mjs files */
const [url, token, id, mode, seconds] = process.argv.slice(2);
const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
// Started, then held until the parent says go on stdin: ten Node processes starting on two cores take seconds, and
// the burst must not be measured through that.
process.stdout.write(JSON.stringify({ ready: true }) + '\n');
await new Promise((resolve) => process.stdin.once('data', resolve));
process.stdin.pause();
const until = Date.now() + Number(seconds) * 1000;
const latencies = [];
let errors = 0;
let n = 0;

const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');

async function post(pathname, body) {
  const t0 = performance.now();
  try {
    const res = await fetch(new URL(pathname, url), { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(15_000) });
    const json = await res.json().catch(() => null);
    latencies.push(performance.now() - t0);
    if (res.status >= 300) {
      errors++;
      out({ err: `${pathname} ${res.status} ${JSON.stringify(json).slice(0, 200)}` });
      return null;
    }
    return json ?? {};
  } catch (e) {
    errors++;
    out({ err: `${pathname} ${e?.cause?.code ?? e?.message ?? e}` });
    // The server is down (killed, restarting): do not spin.
    await new Promise((r) => setTimeout(r, 20));
    return null;
  }
}

while (Date.now() < until) {
  n++;
  const eventId = `${id}-${n}`;
  if (mode === 'api') {
    const r = await post('/v1/turns', { source: 'api', session: id, eventId, prompt: `prompt ${eventId}`, response: `answer ${eventId}` });
    if (r === null) continue;
    if (r.spooled === true) out({ ack: 'turn', source: 'api', eventId });
    else if (r.turn) {
      out({ ack: 'turn', source: 'api', eventId, turnId: r.turn.id });
      const rated = await post('/api/rate', { turnId: r.turn.id, value: n % 2 === 0 ? 'good' : 'bad', comment: `comment ${eventId}` });
      if (rated?.rating) out({ ack: 'rating', id: rated.rating.id, turnId: r.turn.id, comment: `comment ${eventId}` });
    }
  } else if (mode === 'claude') {
    const prompt = await post('/hooks/claude', { hook_event_name: 'UserPromptSubmit', session_id: id, prompt_id: `p${n}`, prompt: `prompt ${eventId}` });
    if (prompt === null) continue;
    const stop = await post('/hooks/claude', { hook_event_name: 'Stop', session_id: id, prompt_id: `p${n}`, last_assistant_message: `answer ${eventId}` });
    if (stop !== null) out({ ack: 'turn', source: 'claude-code', eventId: `${id}:p${n}` });
  } else {
    const r = await post('/hooks/codex', { type: 'agent-turn-complete', 'thread-id': id, 'turn-id': `t${n}`, 'input-messages': [`prompt ${eventId}`], 'last-assistant-message': `answer ${eventId}` });
    if (r !== null) out({ ack: 'turn', source: 'codex', eventId: `${id}:t${n}` });
  }
}
out({ done: true, errors, latencies });
