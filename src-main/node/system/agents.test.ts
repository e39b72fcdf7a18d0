// What `rein setup <agent> --local-model` says about fitting the agent's prompt (fitAgentContext), on the committed
// small LM (resources/small-lm: 512 trained positions, the tiny presets' training limit of 2048 tokens).
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultSettings } from '../../common/config.ts';
import { AGENT_PROMPT_TOKENS, fitAgentContext } from './agents.ts';

const SMALL_LM = path.resolve('resources/small-lm');

describe('fitAgentContext', () => {
  it("says the agent's turns train as text when its prompt is longer than the training limit, and how to fit it", () => {
    const s = { ...defaultSettings(), 'model.active': SMALL_LM };
    const claude = fitAgentContext('claude', s, {}).notes.join('\n');
    expect(claude).toContain(`Claude Code's prompt (about 10.4k tokens) is longer than the training limit of this model (2048 tokens, training maxTokens)`);
    expect(claude).toContain('train as text (KTO), not on-policy (MIS-PO)');
    expect(claude).toContain('--system-prompt');
    expect(claude).toContain(`--tools ""`);
    const codex = fitAgentContext('codex', s, {}).notes.join('\n');
    expect(codex).toContain(`Codex's prompt (about 11.8k tokens) is longer than the training limit of this model (2048 tokens, training maxTokens)`);
    expect(codex).not.toContain('--system-prompt');
  });

  it('says nothing of it when the training limit holds the prompt, or when the model cannot be read', () => {
    const raised = { ...defaultSettings(), 'model.active': SMALL_LM, 'training.preset': 'custom' as const, 'training.custom': { maxTokens: 2 * AGENT_PROMPT_TOKENS.codex } };
    for (const agent of ['claude', 'codex'] as const) expect(fitAgentContext(agent, raised, {}).notes.join('\n')).not.toContain('training limit');
    const unknown = { ...defaultSettings(), 'model.active': path.resolve('no-such-model') };
    expect(fitAgentContext('claude', unknown, {}).notes.join('\n')).not.toContain('training limit');
  });
});
