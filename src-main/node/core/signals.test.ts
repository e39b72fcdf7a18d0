// Signals recorded as turns are captured, through the real core and store: the next prompt of a session becomes a
// follow-up on the session's previous answer, a restated prompt a re-ask, and turnSignals reads the weak label.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { CaptureTurnInput } from '../../common/api.ts';
import { NotFoundError } from '../../common/errors.ts';
import { SMALL_LM_DIR } from '../demo/small-lm.ts';
import { resolveHome } from '../home.ts';
import { createCore, type ReinCore } from './core.ts';

const cores: ReinCore[] = [];
const dirs: string[] = [];
let clock = 1_700_000_000_000;

function newCore(): ReinCore {
  const dir = mkdtempSync(path.join(tmpdir(), 'rein-signals-'));
  dirs.push(dir);
  const core = createCore({ home: resolveHome({ REIN_HOME: dir }), now: () => clock });
  cores.push(core);
  return core;
}

afterEach(() => {
  for (const c of cores.splice(0)) c.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

let seq = 0;
async function capture(core: ReinCore, prompt: string, over: Partial<CaptureTurnInput> = {}): Promise<number> {
  seq++;
  clock += 30_000;
  const input: CaptureTurnInput = { source: 'claude-code', session: 's1', eventId: `s1:p${seq}`, prompt, response: `answer ${seq}`, ...over };
  return (await core.call('captureTurn', input, 'hook')).turn!.id;
}

describe('signals from captured turns', () => {
  it("stores the next prompt of the session as a follow-up on the previous answer, and reads it as a weak label", async () => {
    const core = newCore();
    const first = await capture(core, 'make the parser accept trailing commas');
    expect((await core.call('turnSignals', { turnId: first }, 'test')).signals).toEqual([]);
    const second = await capture(core, "no, that's wrong, the test still fails");
    const out = await core.call('turnSignals', { turnId: first }, 'test');
    expect(out.signals).toHaveLength(1);
    expect(out.signals[0]).toMatchObject({ turnId: first, kind: 'followup', fromTurnId: second, evidence: "no, that's wrong, the test still fails" });
    expect(out.signals[0]!.detail).toMatchObject({ gapMs: 30_000, measure: 'dice/words' });
    expect(out.label).toMatchObject({ value: 'bad', rule: 'says-wrong', signalId: out.signals[0]!.id });
    expect(out.label!.quote).toContain("that's wrong");
    // The newest answer has no reaction yet.
    expect((await core.call('turnSignals', { turnId: second }, 'test')).signals).toEqual([]);
    // A retried capture of the same prompt (Stop fired twice) adds nothing.
    await capture(core, "no, that's wrong, the test still fails", { eventId: `s1:p${seq}` });
    expect((await core.call('turnSignals', { turnId: first }, 'test')).signals).toHaveLength(1);
  });

  it('records a re-ask when the next prompt restates the previous one, measured over the model tokenizer', async () => {
    const core = newCore();
    await core.call('setSettings', { values: { 'model.active': SMALL_LM_DIR, 'training.auto': false } }, 'test');
    // The first follow-up asks for the model's tokenizer, which loads on a timer after it, off the capture's path:
    // that follow-up is measured over words.
    const warm = await capture(core, 'warm up', { session: 'warm' });
    await capture(core, 'warm up again', { session: 'warm' });
    expect((await core.call('turnSignals', { turnId: warm }, 'test')).signals[0]!.detail).toMatchObject({ measure: 'dice/words' });
    await new Promise((r) => setTimeout(r, 0));
    const first = await capture(core, 'Fix the failing test in parser.ts, the trailing comma case');
    await capture(core, 'fix the failing trailing comma test in parser.ts please');
    const { signals, label } = await core.call('turnSignals', { turnId: first }, 'test');
    expect(signals.map((s) => s.kind)).toEqual(['followup', 'reask']);
    const reask = signals[1]!;
    expect(reask.score).toBeGreaterThanOrEqual(0.6);
    expect(reask.detail).toEqual({ measure: `dice/tokens:${SMALL_LM_DIR}` });
    // The words say nothing about the answer; a re-ask alone is below the default threshold (0.8), so no label...
    expect(label).toBeNull();
    // ...and a label at a lower threshold, naming its rule and quoting the re-ask.
    expect((await core.call('turnSignals', { turnId: first, threshold: 0.6 }, 'test')).label).toMatchObject({ value: 'bad', rule: 'reask', confidence: 0.7 });
    // A new request in the same session is a follow-up but not a re-ask.
    const third = await capture(core, 'now add a --json flag to the list command');
    const after = await core.call('turnSignals', { turnId: third - 1 }, 'test');
    expect(after.signals.map((s) => s.kind)).toEqual(['followup']);
    expect(after.signals[0]!.detail.similarity).toBeLessThan(0.6);
  });

  it('links only turns of one session and source, skips subagents, and forgets a signal with its evidence', async () => {
    const core = newCore();
    const a = await capture(core, 'write the migration');
    await capture(core, 'thanks, perfect', { session: 'other' });
    await capture(core, 'perfect, thanks', { source: 'codex', eventId: 'codex-1' });
    await capture(core, 'a subagent task from the parent agent', { eventId: `s1:agent:x` });
    expect((await core.call('turnSignals', { turnId: a }, 'test')).signals).toEqual([]);
    const b = await capture(core, 'perfect, thanks!');
    const out = await core.call('turnSignals', { turnId: a }, 'test');
    expect(out.signals.map((s) => s.fromTurnId)).toEqual([b]);
    expect(out.label).toMatchObject({ value: 'good' });
    await core.call('deleteTurn', { turnId: b }, 'test');
    expect((await core.call('turnSignals', { turnId: a }, 'test')).signals).toEqual([]);
    await expect(core.call('turnSignals', { turnId: 9999 }, 'test')).rejects.toBeInstanceOf(NotFoundError);
  });

  it("stores a client's interrupt report as an interrupt signal on the turn, and the next prompt as its follow-up", async () => {
    const core = newCore();
    const cut = await capture(core, 'rename getUser to fetchUser', { interrupted: '[Request interrupted by user for tool use]' });
    await capture(core, "no, don't delete the module, just rename the function");
    const { signals, label } = await core.call('turnSignals', { turnId: cut }, 'test');
    expect(signals.map((s) => [s.kind, s.evidence])).toEqual([
      ['interrupt', '[Request interrupted by user for tool use]'],
      ['followup', "no, don't delete the module, just rename the function"],
    ]);
    expect(signals[0]).toMatchObject({ fromTurnId: null, detail: { source: 'claude-code' } });
    // The words decide: "no, ..." is Bad at 0.85; the interrupt alone would be 0.7.
    expect(label).toMatchObject({ value: 'bad', rule: 'opens-with-no' });
    // Without words that say anything, the interrupt is the label at a lower threshold.
    const quiet = await capture(core, 'list the files', { session: 's2', interrupted: '[Request interrupted by user]' });
    expect((await core.call('turnSignals', { turnId: quiet, threshold: 0.7 }, 'test')).label).toMatchObject({ value: 'bad', rule: 'interrupted', quote: '[Request interrupted by user]' });
  });

  it('lists unrated answers with a label to confirm; confirming rates them through rate, never over a rating; dismissing keeps the evidence', async () => {
    const core = newCore();
    const a = await capture(core, 'add pagination to the list endpoint');
    const b = await capture(core, 'perfect, thanks');
    const c = await capture(core, 'that is wrong, page 2 repeats page 1');
    await capture(core, 'now add a --json flag');
    const list = (await core.call('weakLabels', {}, 'test')).items;
    // a: Good (praise), b: Bad (says-wrong); c's follow-up is a new request, so no label.
    expect(list.map((i) => [i.turn.id, i.label.value, i.label.rule])).toEqual([
      [b, 'bad', 'says-wrong'],
      [a, 'good', 'praise'],
    ]);
    expect(list[0]!.explanation).toBe("Rein read this as Bad because you wrote: 'that is wrong'");
    const confirmed = await core.call('confirmWeakLabel', { turnId: a }, 'test');
    expect(confirmed.rating).toMatchObject({ turnId: a, kind: 'good', rater: 'implicit:praise' });
    const flipped = await core.call('confirmWeakLabel', { turnId: b, flip: true }, 'test');
    expect(flipped.rating).toMatchObject({ turnId: b, kind: 'good', rater: 'implicit-flipped:says-wrong' });
    // Rated turns leave the list, and a rated turn is never rated over by its label.
    expect((await core.call('weakLabels', {}, 'test')).items).toEqual([]);
    await expect(core.call('confirmWeakLabel', { turnId: b }, 'test')).rejects.toThrow(/already rated good; a weak label never replaces a rating/);
    await expect(core.call('confirmWeakLabel', { turnId: c }, 'test')).rejects.toBeInstanceOf(NotFoundError);

    const d = await capture(core, 'rename the module', { session: 's3' });
    await capture(core, 'nope, still broken', { session: 's3' });
    expect((await core.call('weakLabels', {}, 'test')).items.map((i) => i.turn.id)).toEqual([d]);
    expect(await core.call('dismissWeakLabel', { turnId: d }, 'test')).toEqual({ dismissed: 1 });
    expect((await core.call('weakLabels', {}, 'test')).items).toEqual([]);
    const after = await core.call('turnSignals', { turnId: d }, 'test');
    expect(after.label).toBeNull();
    expect(after.signals).toHaveLength(1);
    expect(after.signals[0]!.dismissedAt).not.toBeNull();
    await expect(core.call('confirmWeakLabel', { turnId: d }, 'test')).rejects.toBeInstanceOf(NotFoundError);
  });
});
