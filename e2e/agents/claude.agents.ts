// Claude Code 2.1 through `rein setup claude`, in a network namespace (claude.scenario.ts does the driving).
import { beforeAll, describe, expect, it } from 'vitest';
import { TOOL_MARKER, TOOL_OUTPUT } from './fake-models.ts';
import type { RatingRow, TurnView } from './harness.ts';
import { inNetns, skipReason } from './netns.ts';

type R = { code: number | null; ms: number; result: string; modelRequests: number; upMs: number; reinRequests: number };
interface Facts {
  settingsMode: number;
  settingsHasToken: boolean;
  settingsHasEnvRef: boolean;
  toolTurn: R;
  turnsAfterTool: TurnView[];
  rlGood: R;
  plainTurn: R;
  rlFix: R;
  ratings: RatingRow[];
  down: R;
  back: R;
  turnsAfterBack: TurnView[];
  settingsRestored: boolean;
  settingsModeAfter: number;
  rlFileLeft: boolean;
  afterUninstall: R;
  payloadEvents: string[];
}

const skip = skipReason();
describe.skipIf(skip !== null)(`Claude Code against rein serve${skip ? ` (skipped: ${skip})` : ''}`, () => {
  let f: Facts;
  beforeAll(async () => {
    f = (await inNetns<Facts>('claude.scenario.ts', 400_000)).result;
  });

  it('setup works without a shell-profile edit: the literal token in settings.json, mode 0600', () => {
    expect(f.settingsHasToken).toBe(true);
    expect(f.settingsHasEnvRef).toBe(false);
    expect(f.settingsMode).toBe(0o600);
  });

  it('a tool turn is stored with the human prompt, the final answer and the tool call as context', () => {
    expect(f.toolTurn.code).toBe(0);
    expect(f.toolTurn.result).toBe(`The tool printed: ${TOOL_OUTPUT}`);
    expect(f.turnsAfterTool).toHaveLength(1);
    const t = f.turnsAfterTool[0]!;
    expect(t.prompt).toBe(`${TOOL_MARKER} and tell me what it printed`);
    expect(t.response).toBe(`The tool printed: ${TOOL_OUTPUT}`);
    expect(t.context.some((c) => c.name === 'Bash' && c.content.includes(`echo ${TOOL_OUTPUT}`))).toBe(true);
    // The tool's result may or may not be in the transcript when Stop fires (Claude writes it asynchronously);
    // when it is, it is kept as a tool-role context message after its call, never taken as the prompt.
    const results = t.context.filter((c) => c.type === 'tool_result');
    for (const r of results) expect(r.role).toBe('tool');
    expect(t.context.findIndex((c) => c.type === 'tool_result')).not.toBe(0);
  });

  it('/rl good rates that turn, prints the reason line and makes no model request', () => {
    expect(f.rlGood.code).toBe(0);
    expect(f.rlGood.modelRequests).toBe(0);
    expect(f.rlGood.result).toContain('Rated 👍 · 1 pending');
    expect(f.ratings[0]).toMatchObject({ turnId: f.turnsAfterTool[0]!.id, kind: 'good', rater: 'claude-code /rl' });
  });

  it('/rl fix stores the correction on the next turn, with no model request', () => {
    expect(f.plainTurn.code).toBe(0);
    expect(f.rlFix.modelRequests).toBe(0);
    expect(f.rlFix.result).toContain('Saved your correction');
    expect(f.ratings[1]).toMatchObject({ kind: 'bad', correction: 'The better answer is forty-two.' });
    expect(f.ratings[1]!.turnId).not.toBe(f.ratings[0]!.turnId);
  });

  it('with Rein down the turn completes (exit 0, < 1 s added); back up, turns are captured again', () => {
    expect(f.down.code).toBe(0);
    expect(f.down.result).toBe('Fake answer to: A turn while Rein is down?');
    expect(f.down.ms - f.down.upMs).toBeLessThan(1000);
    expect(f.back.code).toBe(0);
    const prompts = f.turnsAfterBack.map((t) => t.prompt);
    expect(prompts).toContain('A turn after Rein is back?');
    expect(prompts).not.toContain('A turn while Rein is down?');
  });

  it('after uninstall settings.json is byte-identical (mode too), /rl is gone, and nothing reaches Rein', () => {
    expect(f.settingsRestored).toBe(true);
    expect(f.settingsModeAfter).toBe(0o644);
    expect(f.rlFileLeft).toBe(false);
    expect(f.afterUninstall.code).toBe(0);
    expect(f.afterUninstall.reinRequests).toBe(0);
  });

  it("the user's own command hooks kept firing beside Rein's", () => {
    expect(f.payloadEvents.filter((e) => e === 'Stop').length).toBeGreaterThanOrEqual(5);
  });
});
