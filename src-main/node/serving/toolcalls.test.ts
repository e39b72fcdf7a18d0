import { describe, expect, it } from 'vitest';
import { parseToolCalls, ToolCallStream, toolFamily } from './toolcalls.ts';
import type { StreamPiece, ToolFamily } from './toolcalls.ts';

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

/** Feeds a reply one piece at a time, as a model samples it; the pieces sent after each, and at the end. */
function stream(family: ToolFamily | null, pieces: string[]): { steps: StreamPiece[][]; all: StreamPiece[] } {
  const s = new ToolCallStream(family);
  const steps: StreamPiece[][] = [];
  let full = '';
  for (const p of pieces) steps.push(s.push((full += p)));
  steps.push(s.end(full));
  return { steps, all: steps.flat() };
}
const textOf = (ps: StreamPiece[]) => ps.map((p) => (p.type === 'text' ? p.text : '')).join('');

describe('ToolCallStream', () => {
  it('streams text as it comes and never sends part of an opening tag', () => {
    const { steps, all } = stream('qwen', ['Let', ' me', ' look', '.\n', '<tool', '_call', '>\n{"name": "Bash", ', '"arguments": {"command": "ls"}}\n', '</tool_call>', '\n']);
    expect(steps[0]).toEqual([{ type: 'text', text: 'Let' }]);
    expect(steps.slice(0, 4).flat().filter((p) => p.type === 'text').length).toBe(4);
    expect(textOf(all)).toBe('Let me look.');
    for (const p of all) if (p.type === 'text') expect(p.text).not.toContain('<');
    // The call goes out when its closing tag arrives, not at the end.
    expect(steps[8]).toEqual([{ type: 'call', call: { name: 'Bash', arguments: '{"command":"ls"}' } }]);
    const whole = parseToolCalls('Let me look.\n<tool_call>\n{"name": "Bash", "arguments": {"command": "ls"}}\n</tool_call>\n', 'qwen');
    expect({ text: textOf(all), calls: all.flatMap((p) => (p.type === 'call' ? [p.call] : [])) }).toEqual(whole);
  });

  it('sends a reply without calls exactly, a held "<" once it is not a tag, and a block that does not parse as text', () => {
    const pieces = ['a < b', ' <', 'b>', '\n\n', 'end <tool_call>{oops}</tool_call> x', '  '];
    const { steps, all } = stream('qwen', pieces);
    expect(steps[0]).toEqual([{ type: 'text', text: 'a < b' }]);
    expect(steps[1]).toEqual([]);
    expect(textOf(all)).toBe(pieces.join(''));
    expect(all.every((p) => p.type === 'text')).toBe(true);
  });

  it('an unclosed block at the end is text', () => {
    expect(textOf(stream('qwen', ['hi ', '<tool_call>{"name": "x"']).all)).toBe('hi <tool_call>{"name": "x"');
  });

  it("holds Mistral's [TOOL_CALLS] and a Llama 3 JSON reply to the end, and reads them whole", () => {
    const m = stream('mistral', ['ok ', '[TOOL', '_CALLS][{"name": "Bash", "arguments": {"command": "ls"}}]']);
    expect(m.all).toEqual([{ type: 'text', text: 'ok' }, { type: 'call', call: { name: 'Bash', arguments: '{"command":"ls"}' } }]);
    const l = stream('llama3', ['{"name": "a", ', '"parameters": {}}']);
    expect(l.steps[0]).toEqual([]);
    expect(l.all).toEqual([{ type: 'call', call: { name: 'a', arguments: '{}' } }]);
    expect(stream('llama3', ['Hi', ' there']).steps[0]).toEqual([{ type: 'text', text: 'Hi' }]);
  });
});
