// Interrupting the real Claude Code and Codex while an answer streams from the local model through Rein's proxy
// (interrupt.scenario.ts does the driving): Ctrl-C once part of the answer has arrived. The proxy stores the answer as
// far as it came, on-policy, with an `interrupt` signal and its evidence; an interrupt alone suggests no label.
import { beforeAll, describe, expect, it } from 'vitest';
import { interruptEvidence } from '../../src-main/node/serving/upstream.ts';
import { SLOW_ANSWER, type SlowAnswer } from './fake-local-model.ts';
import { inNetns, skipReason } from './netns.ts';

interface Interrupted {
  code: number | null;
  signal: string | null;
  sentAtInterrupt: number | null;
  slow: SlowAnswer | null;
  stderr: string;
  ms: number;
}
interface Stored {
  turn: { source: string; session: string | null; prompt: string; response: string; onPolicy: boolean; tokens: number[] | null; logprobs: number[] | null };
  signals: { signals: { kind: string; evidence: string; fromTurnId: number | null }[]; label: unknown; explanation: string | null };
}
interface Facts {
  error?: string;
  claude: Interrupted;
  claudeTurn: Stored | null;
  codex: Interrupted;
  codexTurn: Stored | null;
  proxyLog: string;
}

const skip = skipReason();
describe.skipIf(skip !== null)(`an interrupt from the real clients${skip ? ` (skipped: ${skip})` : ''}`, () => {
  let f: Facts;
  beforeAll(async () => {
    f = (await inNetns<Facts>('interrupt.scenario.ts', 240_000)).result;
  }, 250_000);

  for (const [client, source] of [['claude', 'claude-code'], ['codex', 'codex']] as const) {
    it(`${client}: Ctrl-C mid-answer stops the client and closes its stream before the answer's end`, () => {
      expect(f.error, f.proxyLog).toBeUndefined();
      const r = f[client];
      expect(r.sentAtInterrupt, r.stderr).not.toBeNull();
      // The client stopped on the interrupt (well before the ~39 s the whole answer takes), and left the stream.
      expect(r.ms).toBeLessThan(30_000);
      expect(r.slow!.clientLeft).toBe(true);
      expect(r.slow!.sent).toBeLessThan(r.slow!.total);
    });

    it(`${client}: the answer as far as it came is stored on-policy with an interrupt signal and its evidence`, () => {
      const r = f[client];
      const s = f[`${client}Turn`]!;
      expect(s.turn).toMatchObject({ source, onPolicy: true });
      expect(s.turn.session).not.toBeNull();
      const n = s.turn.tokens!.length;
      expect(n).toBeGreaterThan(0);
      expect(n).toBeLessThanOrEqual(r.slow!.sent);
      expect(s.turn.logprobs).toHaveLength(n);
      // The scripted model streams three characters a token: the stored answer is exactly the part that was sent.
      expect(s.turn.response).toBe(SLOW_ANSWER.slice(0, 3 * n));
      expect(s.signals.signals).toEqual([expect.objectContaining({ kind: 'interrupt', fromTurnId: null, evidence: interruptEvidence(n) })]);
      // An interrupt alone is below the reader's threshold: it is shown as a signal, and suggests no label.
      expect(s.signals.label).toBeNull();
    });
  }
});
