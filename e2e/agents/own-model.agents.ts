// Claude Code 2.1 and Codex 0.169 on Rein's own model server with the small pretrained LM (own-model.scenario.ts does
// the driving, offline in a network namespace): a text-only turn in each completes with exit 0 and is stored
// on-policy, with the tokens the model server sampled and their μ. The small LM was trained on 512 positions and the
// agents' prompts run past 10,000 of its tokens, so the words are noise; the loop is what is proven here.
import { beforeAll, describe, expect, it } from 'vitest';
import { inNetns, skipReason } from './netns.ts';

interface StoredTurn {
  source: string;
  prompt: string;
  response: string;
  onPolicy: boolean;
  tokens: number | null;
  logprobs: number | null;
  adapterVersion?: number | null;
}
type Run = { code: number | null; result?: string; stdout?: string; stderr?: string };
interface Facts {
  claudeTurn: Run;
  claudeTurns: StoredTurn[];
  codexTurn: Run;
  codexTurns: StoredTurn[];
  proxyLog: string;
}

/**
 * The turn is stored on-policy, with the tokens the model server sampled and their μ. The small LM sometimes samples
 * its end-of-turn first, and Claude Code then asks again itself ("[Your previous response had no visible output…]"
 * appended to the prompt); each reply is a turn of its own, so a re-ask follows only an empty reply.
 */
function expectOnPolicyTurns(turns: StoredTurn[], source: string): void {
  expect(turns.length).toBeGreaterThanOrEqual(1);
  for (const [i, t] of turns.entries()) {
    expect(t).toMatchObject({ source, onPolicy: true });
    expect(t.prompt.startsWith('Say hello in one line.')).toBe(true);
    expect(t.tokens).toBeGreaterThan(0);
    expect(t.logprobs).toBe(t.tokens);
    if (i < turns.length - 1) expect(t.response, 'only an empty reply is asked again').toBe('');
  }
  expect(turns[0]!.prompt).toBe('Say hello in one line.');
}

const skip = skipReason();
describe.skipIf(skip !== null)(`Claude Code and Codex on Rein's own model server${skip ? ` (skipped: ${skip})` : ''}`, () => {
  let f: Facts;
  beforeAll(async () => {
    f = (await inNetns<Facts>('own-model.scenario.ts', 600_000)).result;
  });

  it('Claude Code: a text-only turn on the small LM exits 0 and is stored on-policy with its tokens and μ', () => {
    expect(f.claudeTurn.code, f.proxyLog).toBe(0);
    expectOnPolicyTurns(f.claudeTurns, 'claude-code');
    expect(f.claudeTurn.result?.trim()).toBe(f.claudeTurns.at(-1)!.response.trim());
  });

  it('Codex: a text-only turn on the small LM exits 0 and is stored on-policy with its tokens and μ', () => {
    expect(f.codexTurn.code, `${f.codexTurn.stderr}\n${f.proxyLog}`).toBe(0);
    expectOnPolicyTurns(f.codexTurns, 'codex');
  });
});
