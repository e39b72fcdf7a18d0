// Codex 0.169 through `rein setup codex` (with its real hook-trust step), in a network namespace.
import { beforeAll, describe, expect, it } from 'vitest';
import type { RatingRow, TurnView } from './harness.ts';
import { inNetns, skipReason } from './netns.ts';

type R = { code: number | null; ms: number; upMs: number; stdout: string; stderr: string; modelRequests: number; reinRequests: number; previousNotifyFired: number };
interface Facts {
  setup: { code: number; stderr: string };
  configAfterSetup: string;
  turn: R;
  previousNotify: Record<string, unknown>[];
  turnsAfterFirst: TurnView[];
  rlBad: R;
  ratings: RatingRow[];
  down: R;
  spoolAfterDown: number;
  back: R;
  turnsAfterBack: TurnView[];
  spoolLeft: boolean;
  configRestored: boolean;
  hooksJsonLeft: boolean;
  afterUninstall: R;
}

const skip = skipReason();
describe.skipIf(skip !== null)(`Codex against rein serve${skip ? ` (skipped: ${skip})` : ''}`, () => {
  let f: Facts;
  beforeAll(async () => {
    f = (await inNetns<Facts>('codex.scenario.ts', 400_000)).result;
  });

  it('setup trusts its hooks through codex app-server (no bypass flag), and they run', () => {
    expect(f.setup.code).toBe(0);
    expect(f.setup.stderr).toContain('trusted 2 Rein hook(s)');
    expect(f.configAfterSetup.match(/^trusted_hash = "sha256:[0-9a-f]{64}"$/gm)).toHaveLength(2);
    expect(f.turn.stderr).toContain('hook: Stop Completed');
  });

  it('a turn is stored exactly once from notify and Stop, and the previous notify got the same payload', () => {
    expect(f.turn.code).toBe(0);
    expect(f.turnsAfterFirst).toHaveLength(1);
    const t = f.turnsAfterFirst[0]!;
    expect(t).toMatchObject({ prompt: 'Say hi to the e2e suite', response: 'Fake answer to: Say hi to the e2e suite' });
    expect(f.previousNotify).toHaveLength(1);
    const p = f.previousNotify[0]!;
    expect(p).toMatchObject({ type: 'agent-turn-complete', 'input-messages': ['Say hi to the e2e suite'], 'last-assistant-message': t.response });
    expect(t.eventId).toBe(`${p['thread-id']}:${p['turn-id']}`);
  });

  it('/rl bad is blocked before the model and rates the turn', () => {
    expect(f.rlBad.code).toBe(0);
    expect(f.rlBad.modelRequests).toBe(0);
    expect(f.rlBad.stderr).toContain('hook: UserPromptSubmit Blocked');
    expect(f.ratings).toHaveLength(1);
    expect(f.ratings[0]).toMatchObject({ turnId: f.turnsAfterFirst[0]!.id, kind: 'bad', rater: 'codex /rl' });
  });

  it('with Rein down the turn completes (< 1 s added) and its spooled notify arrives once when Rein is back', () => {
    expect(f.down.code).toBe(0);
    expect(f.down.ms - f.down.upMs).toBeLessThan(1000);
    expect(f.spoolAfterDown).toBeGreaterThanOrEqual(1);
    const prompts = f.turnsAfterBack.map((t) => t.prompt);
    expect(prompts.filter((p) => p === 'A turn while Rein is down')).toHaveLength(1);
    expect(prompts.filter((p) => p === 'A turn after Rein is back')).toHaveLength(1);
    expect(f.spoolLeft).toBe(false);
  });

  it('after uninstall config.toml is byte-identical, hooks.json is gone, nothing reaches Rein, the user notify still fires', () => {
    expect(f.configRestored).toBe(true);
    expect(f.hooksJsonLeft).toBe(false);
    expect(f.afterUninstall.code).toBe(0);
    expect(f.afterUninstall.reinRequests).toBe(0);
    expect(f.afterUninstall.previousNotifyFired).toBe(1);
  });
});
