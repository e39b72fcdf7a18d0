import { describe, expect, it } from 'vitest';
import { parseToolCalls, toolFamily } from './toolcalls.ts';

describe('parseToolCalls', () => {
  it("reads Qwen's <tool_call> blocks, with the text around them", () => {
    const r = parseToolCalls('Let me look.\n<tool_call>\n{"name": "Bash", "arguments": {"command": "ls"}}\n</tool_call>\n<tool_call>\n{"name": "Read", "arguments": {"path": "a"}}\n</tool_call>', 'qwen');
    expect(r).toEqual({ text: 'Let me look.', calls: [{ name: 'Bash', arguments: '{"command":"ls"}' }, { name: 'Read', arguments: '{"path":"a"}' }] });
  });

  it("reads Llama 3.1's JSON form, with or without <|python_tag|>, and ';'-separated calls", () => {
    expect(parseToolCalls('{"name": "get_weather", "parameters": {"city": "Oslo"}}', 'llama3').calls).toEqual([{ name: 'get_weather', arguments: '{"city":"Oslo"}' }]);
    expect(parseToolCalls('<|python_tag|>{"name": "a", "parameters": {}}; {"name": "b", "parameters": {"x": 1}}', 'llama3').calls).toEqual([
      { name: 'a', arguments: '{}' },
      { name: 'b', arguments: '{"x":1}' },
    ]);
  });

  it("reads Mistral's [TOOL_CALLS] list and its v11 name[ARGS] form", () => {
    expect(parseToolCalls('[TOOL_CALLS][{"name": "Bash", "arguments": {"command": "echo hi"}}]', 'mistral')).toEqual({ text: '', calls: [{ name: 'Bash', arguments: '{"command":"echo hi"}' }] });
    expect(parseToolCalls('[TOOL_CALLS]Bash[ARGS]{"command": "echo hi"}', 'mistral').calls).toEqual([{ name: 'Bash', arguments: '{"command":"echo hi"}' }]);
  });

  it('arguments written as a JSON string are read as the object they hold', () => {
    expect(parseToolCalls('<tool_call>{"name": "f", "arguments": "{\\"a\\": 1}"}</tool_call>', 'qwen').calls).toEqual([{ name: 'f', arguments: '{"a":1}' }]);
  });

  it('a malformed call is returned whole as text, never thrown', () => {
    const cases: [string, 'qwen' | 'llama3' | 'mistral'][] = [
      ['<tool_call>\n{"name": "Bash", "arguments": {"command": "ls"\n</tool_call>', 'qwen'],
      ['<tool_call>\n{"name": "Bash", "arguments": {}}', 'qwen'],
      ['<tool_call>{"arguments": {}}</tool_call>', 'qwen'],
      ['{"name": "f", "parameters": [1, 2]}', 'llama3'],
      ['{"name": "f", "parameters": {', 'llama3'],
      ['[TOOL_CALLS][{"name": "f", "arguments": {}', 'mistral'],
      ['[TOOL_CALLS]', 'mistral'],
    ];
    for (const [text, family] of cases) expect(parseToolCalls(text, family), text).toEqual({ text, calls: [] });
  });

  it('plain text is text, in every family', () => {
    for (const f of ['qwen', 'llama3', 'mistral', null] as const) expect(parseToolCalls('The answer is 4.', f)).toEqual({ text: 'The answer is 4.', calls: [] });
  });
});

describe('toolFamily', () => {
  it("names the family from the template's own text", () => {
    expect(toolFamily('{% for tool in tools %}<tools>{{ tool }}</tools>{% endfor %}<tool_call>')).toBe('qwen');
    expect(toolFamily('{{ "[TOOL_CALLS]" }}')).toBe('mistral');
    expect(toolFamily('<|python_tag|>{{ x }}')).toBe('llama3');
    expect(toolFamily('{{ messages }}')).toBeNull();
    expect(toolFamily(null)).toBeNull();
  });
});
