// Claude Code 2.1 and Codex 0.169 on the local model through Rein's proxy, in a network namespace
// (local-model.scenario.ts does the driving): Anthropic Messages and OpenAI Responses over a scripted local model
// server that calls the shell tool and then answers, with logprobs and token ids.
import { beforeAll, describe, expect, it } from 'vitest';
import { TOOL_MARKER, TOOL_OUTPUT } from './fake-models.ts';
import type { RatingRow } from './harness.ts';
import { inNetns, skipReason } from './netns.ts';

interface StoredTurn {
  id: number;
  source: string;
  session: string | null;
  prompt: string;
  response: string;
  onPolicy: boolean;
  tokens: number[] | null;
  logprobs: number[] | null;
  context: { role: string; type?: string; name?: string; content: string; tokens?: number[]; logprobs?: number[] }[];
}
type Run = { code: number | null; result?: string; stdout?: string; session?: string; modelRequests?: number };
interface Facts {
  claudeTurn: Run;
  claudeTurns: StoredTurn[];
  claudeRlGood: Run;
  claudeRatings: RatingRow[];
  claudeRestored: boolean;
  codexSetup: Run;
  codexConfig: string;
  codexTurn: Run;
  codexTurns: StoredTurn[];
  codexRlGood: Run;
  codexRatings: RatingRow[];
  codexRestored: boolean;
}

/** One on-policy agent turn: the human prompt, the shell call with its tokens and μ, its result, the answer with its own. */
function expectToolTurn(turns: StoredTurn[], source: string, call: RegExp): void {
  expect(turns).toHaveLength(1);
  const t = turns[0]!;
  expect(t).toMatchObject({ source, prompt: `${TOOL_MARKER} and tell me what it printed`, response: `The tool printed: ${TOOL_OUTPUT}`, onPolicy: true });
  expect(t.tokens!.length).toBeGreaterThan(0);
  expect(t.logprobs).toHaveLength(t.tokens!.length);
  const steps = t.context.map((c) => c.type);
  expect(steps).toEqual(['tool_use', 'tool_result']);
  const [use, result] = t.context;
  expect(use!.name).toMatch(call);
  expect(use!.content).toContain(`echo ${TOOL_OUTPUT}`);
  expect(use!.tokens!.length).toBeGreaterThan(0);
  expect(use!.logprobs).toHaveLength(use!.tokens!.length);
  expect(result!.content).toContain(TOOL_OUTPUT);
}

const skip = skipReason();
describe.skipIf(skip !== null)(`Claude Code and Codex on the local model${skip ? ` (skipped: ${skip})` : ''}`, () => {
  let f: Facts;
  beforeAll(async () => {
    f = (await inNetns<Facts>('local-model.scenario.ts', 400_000)).result;
  });

  it('Claude Code runs a Bash tool loop through the proxy and exits 0; the turn is stored once, on-policy, with tokens and μ of both replies', () => {
    expect(f.claudeTurn.code).toBe(0);
    expect(f.claudeTurn.result).toBe(`The tool printed: ${TOOL_OUTPUT}`);
    expectToolTurn(f.claudeTurns, 'claude-code', /^Bash$/);
    expect(f.claudeTurns[0]!.session).toBe(f.claudeTurn.session);
  });

  it('Claude Code: /rl good in the same session rates that turn with no model request; uninstall restores settings.json', () => {
    expect(f.claudeRlGood.code).toBe(0);
    expect(f.claudeRlGood.modelRequests).toBe(0);
    expect(f.claudeRlGood.result).toContain('Rated 👍');
    expect(f.claudeRatings).toHaveLength(1);
    expect(f.claudeRatings[0]).toMatchObject({ turnId: f.claudeTurns[0]!.id, kind: 'good' });
    expect(f.claudeRestored).toBe(true);
  });

  it('Codex (wire_api = "responses") runs a shell tool loop through the proxy and exits 0; the turn is stored once, on-policy, with tokens and μ', () => {
    expect(f.codexSetup.code).toBe(0);
    expect(f.codexConfig).toContain('wire_api = "responses"');
    expect(f.codexTurn.code).toBe(0);
    expect(f.codexTurn.stdout).toContain(`The tool printed: ${TOOL_OUTPUT}`);
    expectToolTurn(f.codexTurns, 'codex', /^(shell|shell_command|exec_command)$/);
  });

  it('Codex: /rl good in the resumed session rates that turn with no model request; uninstall restores config.toml', () => {
    expect(f.codexRlGood.code).toBe(0);
    expect(f.codexRlGood.modelRequests).toBe(0);
    expect(f.codexRatings).toHaveLength(1);
    expect(f.codexRatings[0]).toMatchObject({ turnId: f.codexTurns[0]!.id, kind: 'good' });
    expect(f.codexRestored).toBe(true);
  });
});
