// A weak label from the real Claude Code: the second prompt of a session says the first answer was wrong, and the
// first turn gets a Bad label with that prompt as its evidence (weak-label.scenario.ts does the driving).
import { beforeAll, describe, expect, it } from 'vitest';
import { inNetns, skipReason } from './netns.ts';

interface Facts {
  runs: { code: number | null; session: string | undefined; result: string | undefined; stderr: string }[];
  turns: { id: number; prompt: string; session: string | null; rating: unknown }[];
  signals: {
    signals: { kind: string; fromTurnId: number | null; evidence: string }[];
    label: { value: string; rule: string; quote: string; confidence: number } | null;
    explanation: string | null;
  } | null;
  weakLabels: { items: { turn: { id: number }; label: { value: string } }[] };
}

const FIRST = 'make the parser accept trailing commas';
const SECOND = "no, that's wrong, the test still fails";

const skip = skipReason();
describe.skipIf(skip !== null)(`a weak label from Claude Code's next prompt${skip ? ` (skipped: ${skip})` : ''}`, () => {
  let f: Facts;
  beforeAll(async () => {
    f = (await inNetns<Facts>('weak-label.scenario.ts', 300_000)).result;
  });

  it('both prompts run in one session and are stored as two turns of it', () => {
    expect(f.runs.map((r) => r.code)).toEqual([0, 0]);
    expect(f.runs[1]!.session).toBe(f.runs[0]!.session);
    expect(f.turns.map((t) => t.prompt)).toEqual([FIRST, SECOND]);
    expect(f.turns[0]!.session).not.toBeNull();
    expect(f.turns[1]!.session).toBe(f.turns[0]!.session);
  });

  it('the first answer gets a Bad label with the second prompt as its evidence, and no rating', () => {
    const [first, second] = f.turns;
    expect(f.signals!.signals).toEqual([expect.objectContaining({ kind: 'followup', fromTurnId: second!.id, evidence: SECOND })]);
    expect(f.signals!.label).toMatchObject({ value: 'bad', rule: 'says-wrong', quote: "no, that's wrong" });
    expect(f.signals!.explanation).toBe("Rein read this as Bad because you wrote: 'no, that's wrong'");
    expect(first!.rating).toBeNull();
    expect(f.weakLabels.items.map((i) => [i.turn.id, i.label.value])).toEqual([[first!.id, 'bad']]);
  });
});
