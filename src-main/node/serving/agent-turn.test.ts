// What the proxy reads from an agent's request besides the turn: its working directory and whether it is a new prompt.
import { describe, expect, it } from 'vitest';
import { agentCwd, isNewPrompt, type AgentChat, type AgentMessage } from './agent-turn.ts';

const chat = (messages: AgentMessage[], promptAt: number): AgentChat => ({ chat: { messages }, promptAt, prompt: '' });

describe('agentCwd', () => {
  it("reads Claude Code's working directory from its reminder (2.1) or its system prompt (before)", () => {
    const reminder = '<system-reminder>\n# Environment\nYou have been invoked in the following environment: \n - Primary working directory: /home/dev/app\n - Is a git repository: true\n</system-reminder>';
    expect(agentCwd(chat([{ role: 'user', content: [{ type: 'text', text: reminder }, { type: 'text', text: 'fix it' }] }], 0))).toBe('/home/dev/app');
    expect(agentCwd(chat([{ role: 'system', content: 'You are Claude Code.\n<env>\nWorking directory: /srv/my app\nPlatform: linux\n</env>' }, { role: 'user', content: 'fix it' }], 1))).toBe('/srv/my app');
  });

  it("never from a tool's output or a message after the prompt, and not a relative path", () => {
    const tool: AgentMessage = { role: 'tool', content: 'Working directory: /etc', tool_call_id: 'c1' };
    expect(agentCwd(chat([{ role: 'user', content: 'fix it' }, { role: 'assistant', content: '' }, tool], 0))).toBeUndefined();
    expect(agentCwd(chat([{ role: 'user', content: 'fix it' }, { role: 'user', content: 'Working directory: /etc' }], 0))).toBeUndefined();
    expect(agentCwd(chat([{ role: 'system', content: 'Working directory: app' }, { role: 'user', content: 'x' }], 1))).toBeUndefined();
  });
});

describe('isNewPrompt', () => {
  it('a request that ends with the human prompt (and the system text an agent adds after it) is a new prompt; a step is not', () => {
    expect(isNewPrompt(chat([{ role: 'user', content: 'fix it' }, { role: 'system', content: '# Environment' }], 0))).toBe(true);
    expect(isNewPrompt(chat([{ role: 'user', content: 'fix it' }, { role: 'assistant', content: '' }, { role: 'tool', content: 'ok' }], 0))).toBe(false);
    expect(isNewPrompt(chat([{ role: 'user', content: 'x' }], -1))).toBe(false);
  });
});
