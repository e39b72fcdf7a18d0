// OpenClaw 2026.9 through `rein setup openclaw` (the plugin in resources/openclaw-plugin), one gateway for all
// steps, in a network namespace (openclaw.scenario.ts does the driving).
import { beforeAll, describe, expect, it } from 'vitest';
import type { RatingRow, TurnView } from './harness.ts';
import { inNetns, skipReason } from './netns.ts';

type R = { reply: string; ms: number; upMs: number; modelRequests: number };
interface Facts {
  pluginLoaded: boolean;
  gatewayStartMs: number;
  turn: R;
  turnsAfterFirst: TurnView[];
  rlGood: R;
  ratingsAfterGood: RatingRow[];
  rlReset: R;
  ratingsAfterReset: RatingRow[];
  down: R;
  back: R;
  turnsAfterBack: TurnView[];
  configRestored: boolean;
  pluginLoadedAfterUninstall: boolean;
  afterUninstall: { reply: string; modelRequests: number; newTurns: number };
}

const skip = skipReason();
describe.skipIf(skip !== null)(`OpenClaw against rein serve${skip ? ` (skipped: ${skip})` : ''}`, () => {
  let f: Facts;
  beforeAll(async () => {
    f = (await inNetns<Facts>('openclaw.scenario.ts', 400_000)).result;
  });

  it('the gateway loads the Rein plugin from resources/', () => {
    expect(f.pluginLoaded).toBe(true);
  });

  it('a chat.send turn is captured whole: the human message and the entire reply', () => {
    expect(f.turn.reply).toMatch(/^Fake answer to: .*Say hi to the e2e suite/s);
    expect(f.turnsAfterFirst).toHaveLength(1);
    expect(f.turnsAfterFirst[0]).toMatchObject({ source: 'openclaw', session: 'agent:main:main', prompt: 'Say hi to the e2e suite', response: f.turn.reply });
  });

  it('/rl good through chat.send rates it with no model call', () => {
    expect(f.rlGood.modelRequests).toBe(0);
    expect(f.rlGood.reply).toMatch(/^Rated 👍 · 1 pending/);
    expect(f.ratingsAfterGood).toHaveLength(1);
    expect(f.ratingsAfterGood[0]).toMatchObject({ turnId: f.turnsAfterFirst[0]!.id, kind: 'good', rater: 'openclaw:cli' });
  });

  it('/rl reset from a sender not on the admins list is refused and deletes nothing', () => {
    expect(f.rlReset.modelRequests).toBe(0);
    expect(f.rlReset.reply).toContain('/rl reset is not allowed for openclaw:cli');
    expect(f.ratingsAfterReset).toHaveLength(1);
  });

  it('with Rein down the agent still answers; back up, new turns are captured again', () => {
    expect(f.down.reply).toMatch(/A turn while Rein is down/);
    const prompts = f.turnsAfterBack.map((t) => t.prompt);
    expect(prompts).toContain('A turn after Rein is back');
    expect(prompts).not.toContain('A turn while Rein is down');
  });

  it('after uninstall openclaw.json is byte-identical to the copy from before setup', () => {
    expect(f.configRestored).toBe(true);
  });

  it('after uninstall a restarted gateway answers with no Rein plugin and nothing reaching Rein', () => {
    expect(f.pluginLoadedAfterUninstall).toBe(false);
    expect(f.afterUninstall.reply).toMatch(/A turn after uninstall/);
    expect(f.afterUninstall.modelRequests).toBeGreaterThan(0);
    expect(f.afterUninstall.newTurns).toBe(0);
  });
});
