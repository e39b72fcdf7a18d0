// Byte-level BPE, trained here and written as a Hugging Face tokenizer.json, so the engine's loader
// (@huggingface/tokenizers) and the GGUF writer (engine/gguf/vocab.ts, tokenizer.ggml.model "gpt2") read it as
// they read Qwen2's. The format follows tokenizers' serialisation of a BPE model (vocab: token → id, merges:
// "left right" in priority order) with a Split pre-tokenizer then ByteLevel, as Qwen2's tokenizer.json has.
// Training is the textbook algorithm (Sennrich et al. 2016, over bytes as GPT-2 does): split the text with the
// pre-tokenizer regex, map each piece's UTF-8 bytes to printable characters, then repeatedly merge the most
// frequent adjacent pair. Ties go to the lexicographically smallest pair, so a corpus gives one tokenizer.

/**
 * Qwen2's split regex (the text of its tokenizer.json), which llama.cpp knows as pre-tokenizer "qwen2": single
 * digits, letters with one leading non-letter, punctuation runs, newlines, spaces. vocab.ts maps it by text.
 */
export const SPLIT_REGEX =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/**
 * GPT-2's byte → character table (openai/gpt-2 encoder.py bytes_to_unicode): printable Latin-1 bytes stand for
 * themselves, the other 68 bytes take the characters from U+0100 up, in byte order.
 */
export function byteToChar(): string[] {
  const table: string[] = [];
  let next = 256;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    table.push(String.fromCodePoint(printable ? b : next++));
  }
  return table;
}

/** The text split as the pre-tokenizer splits it, each piece in byte characters. */
export function preTokenize(text: string): string[] {
  const table = byteToChar();
  const re = new RegExp(SPLIT_REGEX, 'gu');
  const enc = new TextEncoder();
  return (text.match(re) ?? []).map((piece) => Array.from(enc.encode(piece), (b) => table[b]!).join(''));
}

export interface BpeModel {
  /** Token → id: the 256 byte characters first (in byte order), then each merge's result in merge order. */
  vocab: Map<string, number>;
  merges: [string, string][];
}

/** Learns merges until the vocabulary (bytes + merges) has `vocabSize` tokens, or no pair occurs twice. */
export function trainBpe(texts: Iterable<string>, vocabSize: number): BpeModel {
  const table = byteToChar();
  if (vocabSize < table.length) throw new RangeError(`a byte-level BPE vocabulary needs at least 256 tokens, got ${vocabSize}`);
  const counts = new Map<string, number>();
  for (const text of texts) for (const w of preTokenize(text)) counts.set(w, (counts.get(w) ?? 0) + 1);
  // Each distinct word as its current symbols, with its count.
  const words = [...counts].map(([w, n]) => ({ syms: Array.from(w), n }));
  const vocab = new Map<string, number>(table.map((c, i) => [c, i]));
  const merges: [string, string][] = [];
  while (vocab.size < vocabSize) {
    const pairs = new Map<string, number>();
    for (const { syms, n } of words) {
      for (let i = 0; i + 1 < syms.length; i++) {
        const k = `${syms[i]} ${syms[i + 1]}`;
        pairs.set(k, (pairs.get(k) ?? 0) + n);
      }
    }
    let best: string | null = null;
    let bestN = 1;
    for (const [k, n] of pairs) if (n > bestN || (n === bestN && best !== null && k < best)) [best, bestN] = [k, n];
    if (best === null) break;
    const [a, b] = best.split(' ') as [string, string];
    const ab = a + b;
    merges.push([a, b]);
    if (!vocab.has(ab)) vocab.set(ab, vocab.size);
    for (const w of words) {
      const out: string[] = [];
      for (let i = 0; i < w.syms.length; i++) {
        if (i + 1 < w.syms.length && w.syms[i] === a && w.syms[i + 1] === b) {
          out.push(ab);
          i++;
        } else out.push(w.syms[i]!);
      }
      w.syms = out;
    }
  }
  return { vocab, merges };
}

/** The tokenizer.json object for a trained model plus special tokens appended after it. */
export function tokenizerJson(model: BpeModel, special: readonly string[]): Record<string, unknown> {
  const vocab: Record<string, number> = Object.fromEntries(model.vocab);
  const added = special.map((content, i) => ({
    id: model.vocab.size + i,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  }));
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: null,
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { Regex: SPLIT_REGEX }, behavior: 'Isolated', invert: false },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
      ],
    },
    post_processor: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: '',
      end_of_word_suffix: '',
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges: model.merges.map(([a, b]) => `${a} ${b}`),
    },
  };
}
