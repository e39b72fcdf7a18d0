import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tokenizerSourceDir } from './tiny.ts';
import { TokenizerError, loadTokenizer } from './tokenizer.ts';

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
});
