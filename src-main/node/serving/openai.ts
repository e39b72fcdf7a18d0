// The parts of the OpenAI chat completions format the proxy reads (SPECS.md "OpenAI-compatible chat API"; the
// reference is OpenAI's API docs for /v1/chat/completions). Requests are read loosely: every field the proxy does not
// use is forwarded as the client sent it. Replies are read from `choices[0]` (message or delta content, and
// `logprobs.content[]` entries {token, logprob, bytes, top_logprobs}, plus `id` where llama-server adds the token id).
import { z } from 'zod';
import type { ContextMessage } from '../../common/domain.ts';

const ContentPart = z.looseObject({ type: z.string(), text: z.string().optional() });
const Message = z.looseObject({
  role: z.string().min(1).max(64),
  content: z.union([z.string(), z.array(ContentPart), z.null()]).optional(),
});
export const ChatRequest = z.looseObject({
  model: z.string().max(1024).optional(),
  messages: z.array(Message).min(1),
  stream: z.boolean().optional(),
  logprobs: z.boolean().nullable().optional(),
  top_logprobs: z.number().int().nullable().optional(),
  n: z.number().int().nullable().optional(),
  tools: z.array(z.unknown()).nullable().optional(),
  user: z.string().max(512).optional(),
});
export type ChatRequest = z.infer<typeof ChatRequest>;
type Msg = z.infer<typeof Message>;

/** One sampled token as an upstream reports it. */
export interface LogprobEntry {
  token: string;
  logprob: number;
  bytes: number[] | null;
  /** llama-server adds the token id; OpenAI, vLLM and Ollama do not. */
  id: number | null;
}

function textOf(content: Msg['content']): { text: string; plain: boolean } {
  if (content === undefined || content === null) return { text: '', plain: true };
  if (typeof content === 'string') return { text: content, plain: true };
  const texts = content.filter((p) => p.type === 'text' && typeof p.text === 'string').map((p) => p.text!);
  // Image or audio parts: the text alone is not what the model saw.
  return { text: texts.join(''), plain: texts.length === content.length };
}

export interface TurnText {
  prompt: string;
  context: ContextMessage[];
  /**
   * Why the trainer could not rebuild exactly the prompt the model was sampled from, or null when it can. The trainer
   * renders `[...context, {role: 'user', content: prompt}]` through the chat template with no tools, so a chat that
   * ends in a tool result, declares tools, or carries non-text parts is stored as off-policy text.
   */
  offPolicyReason: string | null;
}

/** prompt = the last user message; context = the messages before it (SPECS: proxy capture). */
export function turnText(req: ChatRequest): TurnText {
  const msgs = req.messages;
  let last = -1;
  for (let i = msgs.length - 1; i >= 0; i--) if (msgs[i]!.role === 'user') {
    last = i;
    break;
  }
  const toContext = (m: Msg): ContextMessage => {
    const { role, content: _c, ...rest } = m;
    return { ...rest, role, content: textOf(m.content).text };
  };
  const reasons: string[] = [];
  if (last < 0) reasons.push('the chat has no user message');
  else if (last !== msgs.length - 1) reasons.push('the chat does not end with the user message (tool results follow it)');
  if (req.tools !== undefined && req.tools !== null && req.tools.length > 0) reasons.push('the request declares tools, which the chat template renders into the prompt');
  if (msgs.some((m) => !textOf(m.content).plain)) reasons.push('a message has non-text parts');
  return {
    prompt: last < 0 ? '' : textOf(msgs[last]!.content).text,
    context: (last < 0 ? msgs : msgs.slice(0, last)).map(toContext),
    offPolicyReason: reasons.length === 0 ? null : reasons.join('; '),
  };
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

export function entriesOf(logprobs: unknown): LogprobEntry[] | null {
  if (logprobs === null || typeof logprobs !== 'object') return null;
  const content = (logprobs as { content?: unknown }).content;
  if (!Array.isArray(content)) return null;
  const out: LogprobEntry[] = [];
  for (const e of content as Record<string, unknown>[]) {
    const lp = num(e?.logprob);
    if (typeof e?.token !== 'string' || lp === null) return null;
    const bytes = Array.isArray(e.bytes) && e.bytes.every((b) => Number.isInteger(b) && b >= 0 && b < 256) ? (e.bytes as number[]) : null;
    const id = Number.isInteger(e.id) && (e.id as number) >= 0 ? (e.id as number) : null;
    out.push({ token: e.token, logprob: lp, bytes, id });
  }
  return out;
}

/** Collects choice 0 of a completion, from one reply or from its stream of chunks. */
export class CompletionRecorder {
  id: string | null = null;
  model: string | null = null;
  content = '';
  finishReason: string | null = null;
  entries: LogprobEntry[] = [];
  /** False once any chunk of choice 0 carried content without readable logprobs. */
  logprobsComplete = true;

  /** A streamed chunk (`choices[].delta`). */
  chunk(obj: unknown): void {
    this.common(obj, 'delta');
  }

  /** A whole reply (`choices[].message`). */
  reply(obj: unknown): void {
    this.common(obj, 'message');
  }

  private common(obj: unknown, field: 'delta' | 'message'): void {
    if (obj === null || typeof obj !== 'object') return;
    const o = obj as { id?: unknown; model?: unknown; choices?: unknown };
    if (typeof o.id === 'string' && this.id === null) this.id = o.id;
    if (typeof o.model === 'string' && this.model === null) this.model = o.model;
    if (!Array.isArray(o.choices)) return;
    for (const c of o.choices as Record<string, unknown>[]) {
      if ((c?.index ?? 0) !== 0) continue;
      const m = c[field] as { content?: unknown } | undefined;
      const text = typeof m?.content === 'string' ? m.content : '';
      this.content += text;
      if (typeof c.finish_reason === 'string') this.finishReason = c.finish_reason;
      const e = entriesOf(c.logprobs);
      if (e !== null) this.entries.push(...e);
      else if (text.length > 0) this.logprobsComplete = false;
    }
  }
}

/** The same completion object with every choice's logprobs set to null, as upstreams send it when none were asked for. */
export function withoutLogprobs(obj: unknown): unknown {
  if (obj === null || typeof obj !== 'object' || !Array.isArray((obj as { choices?: unknown }).choices)) return obj;
  const o = obj as { choices: Record<string, unknown>[] };
  return { ...o, choices: o.choices.map((c) => (c !== null && typeof c === 'object' && 'logprobs' in c ? { ...c, logprobs: null } : c)) };
}

/**
 * Splits a byte stream into Server-Sent Events (WHATWG HTML §9.2: events end with a blank line; lines end in LF, CR
 * or CRLF). Returns whole events with their terminators, byte-exact, so a caller can forward or rewrite each one.
 */
export class SseSplitter {
  private buf = '';
  private readonly decoder = new TextDecoder();

  push(chunk: Uint8Array): string[] {
    this.buf += this.decoder.decode(chunk, { stream: true });
    const out: string[] = [];
    const re = /\r\n\r\n|\n\n|\r\r/g;
    let start = 0;
    for (let m = re.exec(this.buf); m !== null; m = re.exec(this.buf)) {
      out.push(this.buf.slice(start, m.index + m[0].length));
      start = m.index + m[0].length;
    }
    this.buf = this.buf.slice(start);
    return out;
  }

  /** Whatever is left when the stream ends (an unterminated last event). */
  rest(): string {
    const r = this.buf + this.decoder.decode();
    this.buf = '';
    return r;
  }
}

/** The `data` of one event (multi-line data joined with LF), or null for comments and other fields. */
export function sseData(event: string): string | null {
  const lines = event.split(/\r\n|\n|\r/);
  const data: string[] = [];
  for (const l of lines) {
    if (l.startsWith('data:')) data.push(l.slice(l[5] === ' ' ? 6 : 5));
  }
  return data.length === 0 ? null : data.join('\n');
}
