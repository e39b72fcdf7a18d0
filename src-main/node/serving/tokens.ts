// Token ids of a sampled reply. llama-server reports each sampled token's id; vLLM does when asked
// (`return_tokens_as_token_ids`: tokens arrive as "token_id:N"); OpenAI-style servers (Ollama, LM Studio) report
// only the token's text and its UTF-8 bytes. Text is mapped back to ids through the model's own vocabulary, and the
// mapping is accepted only when it is unique for every token and the ids decode to exactly the reply's text:
// anything less is stored as an off-policy turn, because wrong ids with μ attached would train on the wrong tokens.
import type { LogprobEntry } from './openai.ts';

/** The vocabulary lookups the mapping needs (ReinTokenizer provides them). */
export interface VocabLike {
  readonly size: number;
  tokenToId(token: string): number | null;
  decode(ids: readonly number[]): string;
}

export type TokenMapping = { ok: true; ids: number[]; how: 'ids' | 'vocab' } | { ok: false; reason: string };

/** GPT-2's bytes_to_unicode (openai/gpt-2 encoder.py): the printable alphabet byte-level BPE vocabularies are written in. */
const BYTE_TO_UNICODE: string[] = (() => {
  const keep: number[] = [];
  for (let b = 33; b <= 126; b++) keep.push(b);
  for (let b = 161; b <= 172; b++) keep.push(b);
  for (let b = 174; b <= 255; b++) keep.push(b);
  const map: string[] = new Array<string>(256);
  let n = 0;
  for (let b = 0; b < 256; b++) map[b] = String.fromCodePoint(keep.includes(b) ? b : 256 + n++);
  return map;
})();

const utf8 = new TextEncoder();

function candidates(e: LogprobEntry, vocab: VocabLike): Set<number> {
  const bytes = e.bytes ?? Array.from(utf8.encode(e.token));
  const forms = [
    bytes.map((b) => BYTE_TO_UNICODE[b]!).join(''), // byte-level BPE (Llama 3, Qwen, GPT-2 family)
    e.token, // added/special tokens, and vocabularies stored as plain text
    e.token.replaceAll(' ', '\u2581'), // SentencePiece writes a space as U+2581 (Llama 2, Mistral, Gemma)
  ];
  const ids = new Set<number>();
  for (const f of forms) {
    const id = vocab.tokenToId(f);
    if (id !== null) ids.add(id);
  }
  return ids;
}

const TOKEN_ID = /^token_id:(\d+)$/;

export function mapTokens(entries: readonly LogprobEntry[], text: string, vocab: VocabLike | null): TokenMapping {
  if (entries.length === 0) return { ok: false, reason: 'the upstream returned no logprobs' };
  const direct = entries.map((e) => e.id ?? (TOKEN_ID.test(e.token) ? Number(TOKEN_ID.exec(e.token)![1]) : null));
  let ids: number[];
  let how: 'ids' | 'vocab';
  if (direct.every((id) => id !== null)) {
    ids = direct as number[];
    how = 'ids';
  } else {
    if (vocab === null) return { ok: false, reason: 'the upstream returned token text only and the model has no tokenizer.json to map it' };
    ids = [];
    for (const [i, e] of entries.entries()) {
      const c = candidates(e, vocab);
      if (c.size !== 1) {
        return { ok: false, reason: `token ${i} ${JSON.stringify(e.token)} matches ${c.size === 0 ? 'no' : c.size} vocabulary entries` };
      }
      ids.push([...c][0]!);
    }
    how = 'vocab';
  }
  if (vocab !== null) {
    const bad = ids.find((id) => id >= vocab.size);
    if (bad !== undefined) return { ok: false, reason: `token id ${bad} is outside the model's vocabulary (size ${vocab.size})` };
    // Servers leave the end-of-turn token out of the content but may list it in logprobs: compare both ways.
    const decoded = vocab.decode(ids);
    if (decoded !== text && vocab.decode(ids.slice(0, -1)) !== text) {
      return { ok: false, reason: 'the token ids do not decode to the reply text' };
    }
  }
  return { ok: true, ids, how };
}
