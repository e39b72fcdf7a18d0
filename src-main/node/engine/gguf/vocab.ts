// The tokenizer as GGUF metadata (tokenizer.ggml.*), for byte-level BPE tokenizers (tokenizer.json "BPE" with a
// ByteLevel pre-tokenizer: Llama 3, Qwen2/2.5/3), following llama.cpp's convert_hf_to_gguf.py get_vocab_base /
// _set_vocab_gpt2 and gguf-py's SpecialVocab:
// - ids with no token become "[PAD<i>]" of type UNUSED (vocab_size may exceed the tokenizer, as Qwen's does);
// - added tokens are CONTROL when marked special or when they look special (<|…|>), USER_DEFINED otherwise;
// - merges are written as "left right" strings;
// - bos/eos/pad come from tokenizer_config.json's token strings, else from config.json's ids.
// llama.cpp picks the pre-tokenizer by name (tokenizer.ggml.pre); convert_hf_to_gguf.py finds the name by hashing
// the tokenization of a test text. We match the pre-tokenizer's split regex instead, which names the same thing
// without a Python tokenizer, and refuse a regex we do not know rather than guess.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { GgufError, bool, str, u32 } from './format.ts';
import type { GgufValue } from './format.ts';

// llama.cpp llama-vocab.h llama_token_type / gguf-py TokenType.
export const TOKEN_TYPE = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;

/** Split regexes of known byte-level BPE pre-tokenizers → llama.cpp's pre-tokenizer name. */
const PRE_TOKENIZERS: Record<string, string> = {
  // Llama 3 (meta-llama/Meta-Llama-3-8B tokenizer.json): numbers split into runs of up to 3 digits.
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+":
    'llama-bpe',
  // Qwen2 / Qwen2.5 / Qwen3: single digits.
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+":
    'qwen2',
};

interface AddedToken {
  id: number;
  content: string;
  special?: boolean;
}

interface TokenizerJson {
  model?: { type?: string; vocab?: Record<string, number>; merges?: (string | [string, string])[] };
  added_tokens?: AddedToken[];
  pre_tokenizer?: unknown;
  post_processor?: unknown;
}

function readJson(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new GgufError(`cannot read ${path.basename(file)}: ${(e as Error).message}`, file);
  }
}

/** Every Split regex inside a (possibly nested Sequence) pre-tokenizer. */
function splitRegexes(p: unknown): string[] {
  if (p === null || typeof p !== 'object') return [];
  const o = p as { type?: string; pretokenizers?: unknown[]; pattern?: { Regex?: string } };
  if (o.type === 'Sequence') return (o.pretokenizers ?? []).flatMap(splitRegexes);
  if (o.type === 'Split' && typeof o.pattern?.Regex === 'string') return [o.pattern.Regex];
  return [];
}

function hasByteLevel(p: unknown): boolean {
  if (p === null || typeof p !== 'object') return false;
  const o = p as { type?: string; pretokenizers?: unknown[]; processors?: unknown[] };
  if (o.type === 'ByteLevel') return true;
  return (o.pretokenizers ?? o.processors ?? []).some(hasByteLevel);
}

/** Whether a post-processor's single-sequence template starts with the BOS token (gguf-py SpecialVocab). */
function templateAddsBos(p: unknown, bos: string | null): boolean | null {
  if (p === null || typeof p !== 'object') return null;
  const o = p as { type?: string; processors?: unknown[]; single?: { SpecialToken?: { id?: string } }[] };
  if (o.type === 'Sequence') {
    for (const q of o.processors ?? []) {
      const r = templateAddsBos(q, bos);
      if (r !== null) return r;
    }
    return null;
  }
  if (o.type === 'TemplateProcessing' && Array.isArray(o.single)) {
    const first = o.single[0]?.SpecialToken?.id;
    return first !== undefined && first === bos;
  }
  return null;
}

const tokenText = (v: unknown): string | null =>
  typeof v === 'string' ? v : v !== null && typeof v === 'object' && typeof (v as { content?: unknown }).content === 'string' ? (v as { content: string }).content : null;

// convert_hf_to_gguf.py does_token_look_special.
const looksSpecial = (t: string): boolean =>
  ['<pad>', '<mask>', '<2mass>', '[@BOS@]'].includes(t) ||
  (t.startsWith('<|') && t.endsWith('|>')) ||
  (t.startsWith('<｜') && t.endsWith('｜>')) ||
  (t.startsWith('<unused') && t.endsWith('>'));

export interface VocabInfo {
  metadata: Map<string, GgufValue>;
  tokens: string[];
  pre: string;
  bos: number | null;
  eos: number | null;
  addBos: boolean;
}

/**
 * The tokenizer.* metadata for a model directory. `vocabSize` is config.json's vocab_size (the embedding rows);
 * `configIds` are config.json's bos/eos/pad ids, used where tokenizer_config.json names none.
 */
export function vocabMetadata(dir: string, vocabSize: number, configIds: { bos: number | null; eos: number | null; pad?: number | null }): VocabInfo {
  const tjPath = path.join(dir, 'tokenizer.json');
  if (!existsSync(tjPath)) throw new GgufError('tokenizer.json is missing (needed for the GGUF vocabulary)', dir);
  const tj = readJson(tjPath) as TokenizerJson;
  const tcPath = path.join(dir, 'tokenizer_config.json');
  const tc = (existsSync(tcPath) ? readJson(tcPath) : {}) as Record<string, unknown>;

  if (tj.model?.type !== 'BPE' || !hasByteLevel(tj.pre_tokenizer)) {
    throw new GgufError(`only byte-level BPE tokenizers are supported (tokenizer.json model.type is ${String(tj.model?.type)})`, tjPath);
  }
  const regexes = splitRegexes(tj.pre_tokenizer);
  const pre = regexes.length === 1 ? PRE_TOKENIZERS[regexes[0]!] : undefined;
  if (pre === undefined) {
    throw new GgufError(`unknown pre-tokenizer split pattern(s) ${JSON.stringify(regexes)}: llama.cpp would need a tokenizer.ggml.pre name for it`, tjPath, {
      known: Object.values(PRE_TOKENIZERS),
    });
  }

  const byId = new Map<number, string>();
  for (const [tok, id] of Object.entries(tj.model.vocab ?? {})) byId.set(id, tok);
  const added = new Map<number, AddedToken>();
  for (const a of tj.added_tokens ?? []) {
    added.set(a.id, a);
    byId.set(a.id, a.content);
  }
  // tokenizer_config.json's added_tokens_decoder can mark a token special where tokenizer.json does not.
  const decoder = (tc.added_tokens_decoder ?? {}) as Record<string, { content?: string; special?: boolean }>;
  let maxId = -1;
  for (const id of byId.keys()) maxId = Math.max(maxId, id);
  if (maxId >= vocabSize) throw new GgufError(`the tokenizer has id ${maxId} but vocab_size is ${vocabSize}`, tjPath);

  const tokens: string[] = new Array<string>(vocabSize);
  const types = new Int32Array(vocabSize);
  for (let i = 0; i < vocabSize; i++) {
    const t = byId.get(i);
    if (t === undefined) {
      tokens[i] = `[PAD${i}]`;
      types[i] = TOKEN_TYPE.UNUSED;
      continue;
    }
    const a = added.get(i);
    if (a === undefined) {
      tokens[i] = t;
      types[i] = TOKEN_TYPE.NORMAL;
    } else if (a.special === true || decoder[String(i)]?.special === true || looksSpecial(t)) {
      tokens[i] = t;
      types[i] = TOKEN_TYPE.CONTROL;
    } else {
      tokens[i] = t.replaceAll('\u2581', ' '); // convert_hf_to_gguf pre-normalizes user-defined spaces
      types[i] = TOKEN_TYPE.USER_DEFINED;
    }
  }

  const merges = (tj.model.merges ?? []).map((m) => (typeof m === 'string' ? m : `${m[0]} ${m[1]}`));
  const idOf = new Map<string, number>();
  byId.forEach((t, id) => idOf.set(t, id));
  const special = (field: string, fallback: number | null | undefined): number | null => {
    const text = tokenText(tc[field]);
    if (text !== null) {
      const id = idOf.get(text);
      if (id === undefined) throw new GgufError(`tokenizer_config.json ${field} "${text}" is not a token of tokenizer.json`, tcPath, { field });
      return id;
    }
    return fallback ?? null;
  };
  const bos = special('bos_token', configIds.bos);
  const eos = special('eos_token', configIds.eos);
  const pad = special('pad_token', configIds.pad ?? null);
  const addBos = typeof tc.add_bos_token === 'boolean' ? tc.add_bos_token : (templateAddsBos(tj.post_processor, tokenText(tc.bos_token)) ?? false);

  const md = new Map<string, GgufValue>();
  md.set('tokenizer.ggml.model', str('gpt2'));
  md.set('tokenizer.ggml.pre', str(pre));
  md.set('tokenizer.ggml.tokens', { type: 'str[]', value: tokens });
  md.set('tokenizer.ggml.token_type', { type: 'i32[]', value: types });
  md.set('tokenizer.ggml.merges', { type: 'str[]', value: merges });
  if (bos !== null) md.set('tokenizer.ggml.bos_token_id', u32(bos));
  if (eos !== null) md.set('tokenizer.ggml.eos_token_id', u32(eos));
  if (pad !== null) md.set('tokenizer.ggml.padding_token_id', u32(pad));
  md.set('tokenizer.ggml.add_bos_token', bool(addBos));
  if (typeof tc.add_eos_token === 'boolean') md.set('tokenizer.ggml.add_eos_token', bool(tc.add_eos_token));
  let template: string | null = typeof tc.chat_template === 'string' ? tc.chat_template : null;
  const jinja = path.join(dir, 'chat_template.jinja');
  if (template === null && existsSync(jinja)) template = readFileSync(jinja, 'utf8');
  if (template !== null) md.set('tokenizer.chat_template', str(template));
  return { metadata: md, tokens, pre, bos, eos, addBos };
}

// llama-vocab.cpp: the texts of end-of-generation tokens it recognises.
const EOG_TEXTS = new Set(['<|eot_id|>', '<|im_end|>', '<|end|>', '<end_of_turn>', '<|endoftext|>', '<|eom_id|>', '<EOT>', '_<EOT>', '<｜end▁of▁sentence｜>']);

/** What a pre-tokenizer name means, for reading a GGUF vocabulary back (the inverse of PRE_TOKENIZERS). */
const PRE_TOKENIZER_BY_NAME = new Map(Object.entries(PRE_TOKENIZERS).map(([regex, name]) => [name, regex]));

export interface GgufTokenizerParts {
  /** A tokenizer.json for @huggingface/tokenizers. */
  tokenizerJson: Record<string, unknown>;
  /** A tokenizer_config.json's bos/eos/add_bos fields. */
  config: Record<string, unknown>;
  chatTemplate: string | null;
  /** End-of-turn ids beyond eos (tokenizer.ggml.eot_token_id, eom_token_id). */
  extraEos: number[];
}

/**
 * The tokenizer stored in a GGUF's tokenizer.* metadata as tokenizer.json parts: the reverse of vocabMetadata, for
 * the byte-level BPE vocabularies it writes (tokenizer.ggml.model "gpt2" with the pre-tokenizers named above).
 * NORMAL, BYTE and UNUSED tokens form the BPE vocabulary; CONTROL tokens become special added tokens and
 * USER_DEFINED ones plain added tokens. llama.cpp's "llama-bpe" (Llama 3) looks a whole pre-token up in the
 * vocabulary before merging (llama-vocab.cpp ignore_merges), which is tokenizer.json's ignore_merges.
 */
/** The tokenizer's kind, from two scalar keys: byte-level BPE ("gpt2") with a pre-tokenizer we know; its split regex. */
export function ggufTokenizerKind(get: (key: string) => unknown, where: string): string {
  const model = get('tokenizer.ggml.model');
  if (model !== 'gpt2') throw new GgufError(`tokenizer.ggml.model "${String(model)}" is not supported (only byte-level BPE, "gpt2")`, where, { tokenizer: model });
  const pre = String(get('tokenizer.ggml.pre') ?? 'default');
  const regex = PRE_TOKENIZER_BY_NAME.get(pre);
  if (regex === undefined) {
    throw new GgufError(`pre-tokenizer "${pre}" is not supported (supported: ${[...PRE_TOKENIZER_BY_NAME.keys()].join(', ')})`, where, { pre });
  }
  return regex;
}

export function ggufTokenizer(get: (key: string) => unknown, where: string): GgufTokenizerParts {
  const regex = ggufTokenizerKind(get, where);
  const pre = String(get('tokenizer.ggml.pre') ?? 'default');
  const tokens = get('tokenizer.ggml.tokens');
  if (!Array.isArray(tokens) || tokens.length === 0 || tokens.some((t) => typeof t !== 'string')) throw new GgufError('tokenizer.ggml.tokens is missing or not a list of strings', where);
  const typesRaw = get('tokenizer.ggml.token_type');
  const types = Array.isArray(typesRaw) ? (typesRaw as number[]) : [];
  const merges = get('tokenizer.ggml.merges');
  if (!Array.isArray(merges) || merges.some((m) => typeof m !== 'string')) throw new GgufError('tokenizer.ggml.merges is missing or not a list of strings', where);

  const vocab: Record<string, number> = {};
  const added: Record<string, unknown>[] = [];
  (tokens as string[]).forEach((t, id) => {
    const type = types[id] ?? TOKEN_TYPE.NORMAL;
    if (type === TOKEN_TYPE.CONTROL || type === TOKEN_TYPE.USER_DEFINED) {
      const special = type === TOKEN_TYPE.CONTROL;
      added.push({ id, content: t, single_word: false, lstrip: false, rstrip: false, normalized: !special, special });
    } else if (!Object.hasOwn(vocab, t)) vocab[t] = id;
  });
  const id = (key: string): number | null => {
    const v = get(key);
    return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v < tokens.length ? v : null;
  };
  const bos = id('tokenizer.ggml.bos_token_id');
  const eos = id('tokenizer.ggml.eos_token_id');
  const addBos = get('tokenizer.ggml.add_bos_token') === true && bos !== null;
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false };
  const tokenizerJson: Record<string, unknown> = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    // Qwen's tokenizer.json normalizes to NFC; Llama 3's has no normalizer.
    normalizer: pre === 'qwen2' ? { type: 'NFC' } : null,
    pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Split', pattern: { Regex: regex }, behavior: 'Isolated', invert: false }, byteLevel] },
    post_processor: addBos
      ? {
          type: 'TemplateProcessing',
          single: [{ SpecialToken: { id: tokens[bos!], type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
          pair: [{ SpecialToken: { id: tokens[bos!], type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }],
          special_tokens: { [tokens[bos!] as string]: { id: tokens[bos!], ids: [bos], tokens: [tokens[bos!]] } },
        }
      : byteLevel,
    decoder: byteLevel,
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: pre === 'llama-bpe',
      vocab,
      merges,
    },
  };
  const config: Record<string, unknown> = { add_bos_token: addBos };
  if (bos !== null) config.bos_token = tokens[bos];
  if (eos !== null) config.eos_token = tokens[eos];
  // A GGUF holds one eos id, where config.json may list several (Llama 3: <|end_of_text|>, <|eom_id|>, <|eot_id|>).
  // llama.cpp ends generation on the eot/eom ids and on control tokens with these texts too (llama-vocab.cpp
  // special_eog_ids), so a turn ends where it ends under llama.cpp.
  const eog = new Set([id('tokenizer.ggml.eot_token_id'), id('tokenizer.ggml.eom_token_id')].filter((x): x is number => x !== null));
  (tokens as string[]).forEach((t, i) => {
    if (types[i] === TOKEN_TYPE.CONTROL && EOG_TEXTS.has(t)) eog.add(i);
  });
  if (eos !== null) eog.delete(eos);
  const extraEos = [...eog].sort((a, b) => a - b);
  const template = get('tokenizer.chat_template');
  return { tokenizerJson, config, chatTemplate: typeof template === 'string' ? template : null, extraEos };
}
