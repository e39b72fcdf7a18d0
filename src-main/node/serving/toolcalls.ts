// Tool calls in a local model's own output. A model trained for tools writes its calls as text in its family's format,
// which its chat template also renders (so the trainer rebuilds exactly what was sampled):
// - Qwen 2.5 / 3 (and Hermes): `<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>`, one block per call
//   (Qwen2.5 tokenizer_config.json chat_template; NousResearch Hermes function-calling format).
// - Llama 3.1 / 3.2 JSON tool calling: the whole reply is `{"name": …, "parameters": {…}}`, optionally after
//   `<|python_tag|>` (Meta's llama3_1 prompt format docs, "JSON based tool calling").
// - Mistral: `[TOOL_CALLS][{"name": …, "arguments": {…}}, …]` (mistral-common; v11 tokenizers write
//   `[TOOL_CALLS]name[ARGS]{…}` per call).
// A reply that starts one of these forms and does not parse is not a call: it is returned as text, whole, so the
// client shows what the model wrote and nothing crashes.

export interface ParsedToolCall {
  name: string;
  /** The arguments as a JSON object's text (what OpenAI's `function.arguments` carries). */
  arguments: string;
}

export interface ParsedReply {
  /** The reply's text outside the calls (trimmed of the whitespace the calls leave behind). */
  text: string;
  calls: ParsedToolCall[];
}

export type ToolFamily = 'qwen' | 'llama3' | 'mistral';

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function call(v: unknown, argsKeys: readonly string[]): ParsedToolCall | null {
  if (!isObject(v) || typeof v.name !== 'string' || v.name === '') return null;
  const key = argsKeys.find((k) => k in v);
  const args = key === undefined ? {} : v[key];
  // Some models write the arguments as a JSON string already.
  if (typeof args === 'string') {
    try {
      const inner: unknown = JSON.parse(args);
      return isObject(inner) ? { name: v.name, arguments: JSON.stringify(inner) } : null;
    } catch {
      return null;
    }
  }
  return isObject(args) ? { name: v.name, arguments: JSON.stringify(args) } : null;
}

function json(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const QWEN = /<tool_call>([\s\S]*?)<\/tool_call>/g;

function qwen(text: string): ParsedReply | null {
  if (!text.includes('<tool_call>')) return null;
  const calls: ParsedToolCall[] = [];
  let rest = '';
  let at = 0;
  for (const m of text.matchAll(QWEN)) {
    const c = call(json(m[1]!.trim()), ['arguments', 'parameters']);
    if (c === null) return null;
    calls.push(c);
    rest += text.slice(at, m.index);
    at = m.index + m[0].length;
  }
  rest += text.slice(at);
  // An opening tag with no closing one (the reply was cut) is not a call.
  if (calls.length === 0 || rest.includes('<tool_call>')) return null;
  return { text: rest.trim(), calls };
}

function llama3(text: string): ParsedReply | null {
  const body = text.replace(/^\s*<\|python_tag\|>/, '').trim();
  if (!body.startsWith('{')) return null;
  // One call, or several separated by ';' (what Llama 3.2 writes for parallel calls).
  const parts = body.split(/\}\s*;\s*\{/).map((p, i, all) => (all.length === 1 ? p : i === 0 ? p + '}' : i === all.length - 1 ? '{' + p : '{' + p + '}'));
  const calls: ParsedToolCall[] = [];
  for (const p of parts) {
    const c = call(json(p), ['parameters', 'arguments']);
    if (c === null) return null;
    calls.push(c);
  }
  return { text: '', calls };
}

function mistral(text: string): ParsedReply | null {
  const at = text.indexOf('[TOOL_CALLS]');
  if (at < 0) return null;
  const before = text.slice(0, at).trim();
  const body = text.slice(at + '[TOOL_CALLS]'.length).trim();
  const calls: ParsedToolCall[] = [];
  if (body.startsWith('[')) {
    const list = json(body);
    if (!Array.isArray(list) || list.length === 0) return null;
    for (const v of list) {
      const c = call(v, ['arguments', 'parameters']);
      if (c === null) return null;
      calls.push(c);
    }
  } else {
    // v11: name[ARGS]{…}, repeated after further [TOOL_CALLS] markers.
    for (const piece of body.split('[TOOL_CALLS]')) {
      const m = /^\s*([^\s[]+)\[ARGS\]([\s\S]*)$/.exec(piece);
      if (m === null) return null;
      const c = call({ name: m[1], arguments: json(m[2]!.trim()) }, ['arguments']);
      if (c === null) return null;
      calls.push(c);
    }
  }
  return { text: before, calls };
}

const PARSERS: Record<ToolFamily, (text: string) => ParsedReply | null> = { qwen, llama3, mistral };

/**
 * The family whose format a chat template renders tool calls in, read from the template's own text, or null when
 * it renders none Rein can read.
 */
export function toolFamily(chatTemplate: string | null): ToolFamily | null {
  if (chatTemplate === null) return null;
  if (chatTemplate.includes('<tool_call>')) return 'qwen';
  if (chatTemplate.includes('[TOOL_CALLS]')) return 'mistral';
  if (chatTemplate.includes('<|python_tag|>') || (chatTemplate.includes('<|eom_id|>') && chatTemplate.includes('"parameters"'))) return 'llama3';
  return null;
}

/**
 * The calls in a reply, in `family`'s format (or any known format when null). A reply with no call, or with one
 * that does not parse, is all text.
 */
export function parseToolCalls(text: string, family: ToolFamily | null): ParsedReply {
  const order: ToolFamily[] = family === null ? ['qwen', 'mistral', 'llama3'] : [family];
  for (const f of order) {
    const r = PARSERS[f](text);
    if (r !== null) return r;
  }
  return { text, calls: [] };
}

/** What a reply streams as it is sampled: text, or a whole tool call once its closing tag (or the reply's end) is seen. */
export type StreamPiece = { type: 'text'; text: string } | { type: 'call'; call: ParsedToolCall };

const QWEN_OPEN = '<tool_call>';
const QWEN_CLOSE = '</tool_call>';
const MISTRAL_OPEN = '[TOOL_CALLS]';
const PYTHON_TAG = '<|python_tag|>';

/** The length of the longest end of `s` that begins `word` (a tag that may still be being written). */
function partialTail(s: string, word: string): number {
  for (let n = Math.min(word.length - 1, s.length); n > 0; n--) if (word.startsWith(s.slice(s.length - n))) return n;
  return 0;
}

/**
 * A reply's tool calls, read as the reply is sampled, so that its text streams with tools declared. Text before a
 * call's opening tag goes out at once; an end that may begin a tag is held until the next text settles it, so a
 * partial tag is never sent as text. A Qwen `<tool_call>` block becomes a call when its closing tag arrives (a block
 * that does not parse, or is never closed, is sent as the text it is). Mistral's `[TOOL_CALLS]` and a Llama 3 reply
 * that opens with `{` or `<|python_tag|>` hold the rest of the reply, which is read whole at its end (parseToolCalls).
 * Whitespace touching a call is dropped, as parseToolCalls trims it; a reply without calls streams exactly its text.
 */
export class ToolCallStream {
  private readonly family: ToolFamily | null;
  /** How far into the reply text has been sent or read as a call. */
  private at = 0;
  /** From here to the end the reply is read whole when it ends (Mistral, Llama 3). */
  private holdFrom: number | null = null;
  private afterCall = false;
  private sentAny = false;
  calls = 0;

  constructor(family: ToolFamily | null) {
    this.family = family;
  }

  private has(f: ToolFamily): boolean {
    return this.family === null || this.family === f;
  }

  /** The new pieces, given the whole reply text so far. */
  push(full: string): StreamPiece[] {
    const out: StreamPiece[] = [];
    for (;;) {
      if (this.holdFrom !== null) return out;
      const s = full.slice(this.at);
      if (this.has('llama3') && !this.sentAny && this.calls === 0) {
        const lead = s.trimStart();
        if (lead.startsWith('{') || lead.startsWith(PYTHON_TAG)) {
          this.holdFrom = this.at;
          return out;
        }
        if (lead === '' || PYTHON_TAG.startsWith(lead)) return out;
      }
      const q = this.has('qwen') ? s.indexOf(QWEN_OPEN) : -1;
      const m = this.has('mistral') ? s.indexOf(MISTRAL_OPEN) : -1;
      if (m >= 0 && (q < 0 || m < q)) {
        // The whitespace before the tag stays with it: it is text if the rest turns out not to be a call.
        const before = s.slice(0, m).trimEnd();
        this.text(out, before, false);
        this.holdFrom = this.at += before.length;
        return out;
      }
      if (q >= 0) {
        const close = s.indexOf(QWEN_CLOSE, q + QWEN_OPEN.length);
        if (close < 0) {
          const before = s.slice(0, q).trimEnd();
          this.text(out, before, false);
          this.at += before.length;
          return out;
        }
        const c = call(json(s.slice(q + QWEN_OPEN.length, close).trim()), ['arguments', 'parameters']);
        if (c === null) {
          // Not a call: the block is text, as the model wrote it.
          this.text(out, s.slice(0, close + QWEN_CLOSE.length), false);
          this.at += close + QWEN_CLOSE.length;
          continue;
        }
        this.text(out, s.slice(0, q), true);
        out.push({ type: 'call', call: c });
        this.calls++;
        this.afterCall = true;
        this.at += close + QWEN_CLOSE.length;
        continue;
      }
      const held = Math.max(this.has('qwen') ? partialTail(s, QWEN_OPEN) : 0, this.has('mistral') ? partialTail(s, MISTRAL_OPEN) : 0);
      const safe = s.slice(0, s.length - held);
      // Trailing whitespace waits: it is dropped if a call follows.
      const send = safe.trimEnd();
      this.text(out, send, false);
      this.at += send.length;
      return out;
    }
  }

  /** The last pieces, given the whole reply text once it has ended. */
  end(full: string): StreamPiece[] {
    const out = this.push(full);
    if (this.holdFrom !== null) {
      const rest = full.slice(this.holdFrom);
      const r = parseToolCalls(rest, this.family);
      if (r.calls.length > 0) {
        this.text(out, r.text, true);
        for (const c of r.calls) out.push({ type: 'call', call: c });
        this.calls += r.calls.length;
      } else this.text(out, rest, false);
      this.at = full.length;
      return out;
    }
    const rest = full.slice(this.at);
    // An unclosed block, a partial tag, trailing whitespace: text, unless it is only whitespace after a call.
    if (!(this.calls > 0 && rest.trim() === '')) this.text(out, rest, false);
    this.at = full.length;
    return out;
  }

  /** Sends text (`beforeCall`: a call follows, so its trailing whitespace is dropped; after a call, leading too). */
  private text(out: StreamPiece[], t: string, beforeCall: boolean): void {
    let s = beforeCall ? t.trimEnd() : t;
    if (this.afterCall) s = s.trimStart();
    if (s === '') return;
    this.afterCall = false;
    this.sentAny = true;
    const last = out.at(-1);
    if (last?.type === 'text') last.text += s;
    else out.push({ type: 'text', text: s });
  }
}
