// npm-less: node bench/agent-round.ts [--turns 32] [--prefix 7600] [--reply 300] [--threads 2]
// The time of one training round (training/round.ts runRound, in-process, the balanced preset with maxTokens raised
// to fit) on the small LM, for `turns` Claude-shaped agent turns against `turns` chat turns with the same reply
// length. Each agent turn is stored as the proxy stores it (store/prompt-ids.ts): the ids the model server consumed,
// a shared `prefix` (Claude Code's system prompt and tools are ~7.6k tokens) and a short turn of its own, then a
// `reply`-token answer with its μ; each trains MIS-PO on its reply under all of them. A chat turn's context is its
// short prompt. Rated half Good, half Bad. The reply ids are drawn from the model (base, temperature 1) so μ is
// the model's own. Printed with the round's MIS-PO/KTO counts, steps and trained tokens/s, and the load average (the
// cores here are shared).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Rng } from '../src-main/common/engine/rng.ts';
import { createCore } from '../src-main/node/core/core.ts';
import { SMALL_LM_DIR } from '../src-main/node/demo/small-lm.ts';
import { Engine } from '../src-main/node/engine/engine.ts';
import { resolveHome } from '../src-main/node/home.ts';
import { runRound, type RoundMetrics } from '../src-main/node/training/round.ts';
import { benchArgs } from './args.ts';
import { loadAverage, textIds, timed } from './harness.ts';

const args = benchArgs();
const TURNS = args.num('turns', 32);
const PREFIX = args.num('prefix', 7600);
const REPLY = args.num('reply', 300);
const THREADS = args.num('threads', 2);

const engine = Engine.load(SMALL_LM_DIR, { threads: THREADS });
const tok = engine.tokenizer!;
const rng = new Rng(5);
const shared = textIds(tok, rng, PREFIX);

/** A reply of exactly `REPLY` ids drawn from the base after `context`, with their μ. */
async function reply(context: number[], seed: number): Promise<{ tokens: number[]; logprobs: number[] }> {
  const s = await engine.sample(context, { maxTokens: REPLY, temperature: 1, topP: 1, seed, stop: [] });
  return { tokens: s.tokens, logprobs: s.logprobs };
}

async function round(kind: 'agent' | 'chat'): Promise<{ seconds: number; m: RoundMetrics }> {
  const root = mkdtempSync(path.join(os.tmpdir(), `rein-bench-agent-round-${kind}-`));
  const core = createCore({ home: resolveHome({ REIN_HOME: root }) });
  try {
    await core.call('setSettings', { values: { 'model.active': SMALL_LM_DIR, 'training.auto': false, 'training.preset': 'custom', 'training.custom': { maxTokens: PREFIX + 64 + REPLY } } }, 'cli');
    for (let i = 0; i < TURNS; i++) {
      const prompt = `task ${i}: fix the failing test`;
      const own = tok.encodeChat([{ role: 'user', content: prompt }], { addGenerationPrompt: true });
      const context = kind === 'agent' ? [...shared, ...own] : own;
      const r = await reply(context, 1000 + i);
      const policy = { modelId: SMALL_LM_DIR, temperature: 1, topP: 1 };
      const input = kind === 'agent'
        ? { source: 'claude-code', eventId: `a${i}`, prompt, response: tok.decode(r.tokens), ...r, policy, adapterVersion: 0, promptIds: context }
        : { source: 'api', eventId: `c${i}`, prompt, response: tok.decode(r.tokens), ...r, policy, adapterVersion: 0 };
      const { turn } = await core.call('captureTurn', input, 'cli');
      await core.call('rate', { turnId: turn!.id, value: i % 2 === 0 ? 'good' : 'bad' }, 'cli');
    }
    const run = core.store.runs.insert({ modelId: SMALL_LM_DIR, status: 'running', trigger: 'manual', fromVersion: null }, 'system');
    const t = await timed(() => runRound({ home: core.home, store: core.store, runId: run.id, threads: THREADS }));
    return { seconds: t.wallS, m: t.value.metrics };
  } finally {
    core.close();
    rmSync(root, { recursive: true, force: true });
  }
}

console.log(`agent-round: small LM, ${TURNS} turns, replies of ${REPLY} tokens, agent prefix ${PREFIX} tokens, ${THREADS} threads; load ${loadAverage()}`);
for (const kind of ['chat', 'agent'] as const) {
  const { seconds, m } = await round(kind);
  const s = m.samples;
  console.log(`${kind}: round ${seconds.toFixed(1)} s (train ${m.trainSeconds.toFixed(1)} s, ${m.stepCount} steps, ${m.tokensPerSecond.toFixed(0)} tokens/s); MIS-PO ${s.mispo}, KTO ${s.kto}, held out ${s.heldout}, skipped ${s.skipped.length}; load ${loadAverage()}`);
}
await engine.close();
