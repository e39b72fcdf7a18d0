import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tokenizerSourceDir } from './tiny.ts';
import { ReinTokenizer, TokenizerError, loadTokenizer } from './tokenizer.ts';

const tmp = mkdtempSync(path.join(tmpdir(), 'rein-tok-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('tokenizer', () => {
  const qwen = loadTokenizer(tokenizerSourceDir('qwen2'));
  // Llama 3 Instruct ends a turn with <|eot_id|> (128009), listed in its generation_config.json.
  const llama = loadTokenizer(tokenizerSourceDir('llama'), { extraEosIds: [128001, 128008, 128009] });

  it('round-trips text, including code and non-ASCII', () => {
    const text = 'def f(x):\n    return x ** 2  # quadratisch, 二次 🙂';
    for (const t of [qwen, llama]) expect(t.decode(t.encode(text))).toBe(text);
    expect(qwen.size).toBe(151669);
    expect(llama.size).toBe(128256);
    // No ids is no text (a reply of only the end-of-turn token, with it filtered out).
    for (const t of [qwen, llama]) expect(t.decode([])).toBe('');
    expect(qwen.encode('Hello world')).toEqual([9707, 1879]); // Qwen2 BPE ids: "Hello", "Ġworld"
  });

  it('applies the Qwen chat template and splits prompt and response ids', () => {
    const text = qwen.renderChat([{ role: 'user', content: 'hi' }], { addGenerationPrompt: true });
    expect(text).toBe('<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n');
    const { promptIds, responseIds } = qwen.encodeTurn('Add 2 and 3.', 'It is 5.');
    expect(qwen.decode(promptIds)).toBe('<|im_start|>user\nAdd 2 and 3.<|im_end|>\n<|im_start|>assistant\n');
    // Qwen3's template puts an empty think block before the final answer; the response ends at <|im_end|>.
    expect(qwen.decode(responseIds)).toBe('<think>\n\n</think>\n\nIt is 5.<|im_end|>');
    expect(responseIds.at(-1)).toBe(qwen.tokenToId('<|im_end|>'));
  });

  it('takes a multi-message context with a system prompt', () => {
    const { promptIds, responseIds } = llama.encodeTurn(
      [
        { role: 'system', content: 'Be terse.' },
        { role: 'user', content: 'Capital of France?' },
      ],
      'Paris.',
    );
    expect(promptIds[0]).toBe(128000);
    expect(llama.decode(promptIds)).toContain('<|start_header_id|>system<|end_header_id|>\n\nBe terse.<|eot_id|>');
    expect(llama.decode(responseIds)).toBe('Paris.<|eot_id|>');
  });

  it('fails with a named error on a missing file, a missing template or a bad id', () => {
    expect(() => loadTokenizer(tmp)).toThrow(TokenizerError);
    writeFileSync(path.join(tmp, 'tokenizer.json'), '{"model": ');
    expect(() => loadTokenizer(tmp)).toThrow(/not valid JSON/);
    expect(() => qwen.decode([151669])).toThrow(/outside the vocabulary/);
    const tiny = path.join(tmp, 'plain');
    rmSync(tiny, { recursive: true, force: true });
    writeFileSync(path.join(tmp, 'tokenizer.json'), JSON.stringify({
        added_tokens: [],
        normalizer: null,
        pre_tokenizer: { type: 'Whitespace' },
        post_processor: null,
        decoder: null,
        model: { type: 'WordLevel', vocab: { a: 0, '[UNK]': 1 }, unk_token: '[UNK]' },
      }));
    const plain = loadTokenizer(tmp);
    expect(plain.size).toBe(2);
    expect(() => plain.renderChat([{ role: 'user', content: 'a' }], { addGenerationPrompt: true })).toThrow(/no chat template/);
  });

  describe('an agent turn', () => {
    const steps = [
      { role: 'assistant', content: 'Let me look.' },
      { role: 'assistant', type: 'tool_use', name: 'Read', content: '{"path":"a.ts"}' },
      { role: 'tool', type: 'tool_result', content: 'export const a = 1;' },
      { role: 'assistant', type: 'tool_use', name: 'Bash', content: '{"command":"npm te' }, // cut at TOOL_TEXT_MAX: not JSON
      { role: 'tool', type: 'tool_result', content: 'ok' },
    ];
    const masked = (t: ReinTokenizer, ids: number[], mask: number[]): { m: number; text: string }[] => {
      const runs: { m: number; ids: number[] }[] = [];
      ids.forEach((id, i) => {
        if (runs.at(-1)?.m !== mask[i]) runs.push({ m: mask[i]!, ids: [] });
        runs.at(-1)!.ids.push(id);
      });
      return runs.map((r) => ({ m: r.m, text: t.decode(r.ids) }));
    };

    it('trains each step (text and calls in one message, in the template\'s call format) and the answer, and masks the results', () => {
      const e = qwen.encodeAgentTurn('Fix a.ts', steps, 'Done.');
      expect(qwen.decode(e.promptIds)).toBe('<|im_start|>user\nFix a.ts<|im_end|>\n<|im_start|>assistant\n');
      expect(e.mask).toHaveLength(e.responseIds.length);
      expect(masked(qwen, e.responseIds, e.mask)).toEqual([
        { m: 1, text: 'Let me look.\n<tool_call>\n{"name": "Read", "arguments": {"path": "a.ts"}}\n</tool_call><|im_end|>' },
        { m: 0, text: '\n<|im_start|>user\n<tool_response>\nexport const a = 1;\n</tool_response><|im_end|>\n<|im_start|>assistant\n' },
        { m: 1, text: '<tool_call>\n{"name": "Bash", "arguments": {"command":"npm te}\n</tool_call><|im_end|>' },
        { m: 0, text: '\n<|im_start|>user\n<tool_response>\nok\n</tool_response><|im_end|>\n<|im_start|>assistant\n' },
        { m: 1, text: '<think>\n\n</think>\n\nDone.<|im_end|>' },
      ]);
      // Without steps it is encodeTurn, every token trained.
      const plain = qwen.encodeAgentTurn('Add 2 and 3.', [], 'It is 5.');
      const turn = qwen.encodeTurn('Add 2 and 3.', 'It is 5.');
      expect({ promptIds: plain.promptIds, responseIds: plain.responseIds }).toEqual(turn);
      expect(plain.mask).toEqual(turn.responseIds.map(() => 1));
    });

    it('is refused where the steps cannot be placed: a template that drops the calls or rewrites earlier messages, or a call with no result', () => {
      // Llama 3's template (this package's) has no tool calls: it would train an empty step.
      expect(() => llama.encodeAgentTurn('Fix a.ts', steps, 'Done.')).toThrow(/does not render the tool call to Read/);
      // A template that announces tool use at the top once a tool result appears renders the start of the turn
      // differently as the steps are added (an ordinary turn, which has no tool messages, still encodes).
      const dir = tokenizerSourceDir('qwen2');
      const announcing = new ReinTokenizer(
        dir,
        JSON.parse(readFileSync(path.join(dir, 'tokenizer.json'), 'utf8')),
        JSON.parse(readFileSync(path.join(dir, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>,
        "{%- set seen = namespace(tool=false) %}{%- for m in messages %}{%- if m.role == 'tool' %}{%- set seen.tool = true %}{%- endif %}{%- endfor %}" +
          "{%- if seen.tool %}{{- '<|im_start|>system\\nTools were used.<|im_end|>\\n' }}{%- endif %}" +
          qwen.chatTemplate!,
      );
      expect(announcing.encodeTurn('hi', 'hello').responseIds.length).toBeGreaterThan(0);
      expect(() => announcing.encodeAgentTurn('Fix a.ts', steps, 'Done.')).toThrow(/renders the turn's earlier messages differently/);
      expect(() => qwen.encodeAgentTurn('Fix a.ts', steps.slice(0, 4), 'Done.')).toThrow(/call to Bash that has no result/);
    });
  });
});
