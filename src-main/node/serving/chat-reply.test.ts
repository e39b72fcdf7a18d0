import { describe, expect, it } from 'vitest';
import { ChatReplyReader } from './chat-reply.ts';

const lp = (token: string) => ({ content: [{ token, logprob: -0.1, bytes: null }] });

describe('ChatReplyReader', () => {
  it('reads text and a call streamed in pieces, in order, as translator events', () => {
    const r = new ChatReplyReader();
    const evs = [
      r.chunk({ model: 'm', choices: [{ index: 0, delta: { content: 'Let me' }, logprobs: lp('Let me') }] }),
      r.chunk({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'Bash', arguments: '' } }] } }] }),
      r.chunk({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"command":' } }] } }] }),
      r.chunk({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '"ls"}' } }] }, finish_reason: 'tool_calls' }] }),
      r.chunk({ choices: [], usage: { prompt_tokens: 7, completion_tokens: 3 } }),
    ].flat();
    expect(evs).toEqual([
      { type: 'text', text: 'Let me' },
      { type: 'tool', index: 0, name: 'Bash' },
      { type: 'args', index: 0, delta: '{"command":' },
      { type: 'args', index: 0, delta: '"ls"}' },
    ]);
    expect(r.calls()).toEqual([{ name: 'Bash', arguments: '{"command":"ls"}' }]);
    expect([r.model, r.finishReason, r.promptTokens, r.completionTokens, r.logprobsComplete]).toEqual(['m', 'tool_calls', 7, 3, true]);
  });

  it("holds arguments that come before their call's name, and starts the call once the name is known", () => {
    const r = new ChatReplyReader();
    expect(r.chunk({ choices: [{ delta: { tool_calls: [{ index: 1, function: { arguments: '{}' } }] } }] })).toEqual([]);
    expect(r.chunk({ choices: [{ delta: { tool_calls: [{ index: 1, function: { name: 'f' } }] } }] })).toEqual([
      { type: 'tool', index: 1, name: 'f' },
      { type: 'args', index: 1, delta: '{}' },
    ]);
  });

  it('text without logprobs makes the reply incomplete; a whole reply reads as its stream would', () => {
    const r = new ChatReplyReader();
    r.chunk({ choices: [{ delta: { content: 'a' }, logprobs: null }] });
    expect(r.logprobsComplete).toBe(false);
    const w = new ChatReplyReader();
    const evs = w.reply({ choices: [{ index: 0, message: { role: 'assistant', content: 'hi', tool_calls: [{ id: 'x', type: 'function', function: { name: 'g', arguments: { a: 1 } } }] }, finish_reason: 'tool_calls' }] });
    expect(evs).toEqual([{ type: 'text', text: 'hi' }, { type: 'tool', index: 0, name: 'g' }, { type: 'args', index: 0, delta: '{"a":1}' }]);
  });
});
