// Anthropic Messages (`POST /v1/messages`, what Claude Code speaks through ANTHROPIC_BASE_URL) on the capture proxy,
// translated to and from the upstream's OpenAI chat completions. References: Anthropic's API docs, "Messages" (the
// request: system, messages of text / image / tool_use / tool_result blocks, tools with input_schema, tool_choice)
// and "Streaming Messages" (the event sequence: message_start; per content block content_block_start,
// content_block_delta with text_delta or input_json_delta, content_block_stop; message_delta carrying stop_reason
// and the output usage; message_stop; `error` events and the `{type: "error", error: {type, message}}` body).
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { humanText } from './agent-turn.ts';
import type { AgentChat, AgentMessage } from './agent-turn.ts';
import type { ChatReplyReader, ReplyEvent } from './chat-reply.ts';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

const Block = z.looseObject({ type: z.string().min(1) });
export const MessagesRequest = z.looseObject({
  model: z.string().min(1).max(1024),
  max_tokens: z.number().int().positive(),
  // Claude Code 2.1 also sends `system` messages between the turns (its environment, deferred tools).
  messages: z.array(z.looseObject({ role: z.enum(['user', 'assistant', 'system']), content: z.union([z.string(), z.array(Block)]) })).min(1),
  system: z.union([z.string(), z.array(Block)]).optional(),
  tools: z.array(z.looseObject({ name: z.string().min(1) })).optional(),
  tool_choice: z.looseObject({ type: z.string() }).optional(),
  stream: z.boolean().optional(),
  temperature: z.number().optional(),
  top_p: z.number().optional(),
  top_k: z.number().optional(),
  stop_sequences: z.array(z.string()).optional(),
  metadata: z.looseObject({ user_id: z.string().nullable().optional() }).optional(),
});
export type MessagesRequest = z.infer<typeof MessagesRequest>;

/** Anthropic's error types by HTTP status ("Errors" in Anthropic's API docs). */
export function anthropicErrorType(status: number): string {
  if (status === 400 || status === 415) return 'invalid_request_error';
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 529 || status === 503) return 'overloaded_error';
  return 'api_error';
}

export function anthropicError(status: number, message: string): string {
  return JSON.stringify({ type: 'error', error: { type: anthropicErrorType(status), message } });
}

function text(blocks: string | readonly Obj[] | undefined): string {
  if (blocks === undefined) return '';
  if (typeof blocks === 'string') return blocks;
  return blocks.filter((b) => b.type === 'text' && typeof b.text === 'string').map((b) => b.text as string).join('\n');
}

/**
 * The Claude Code session a request belongs to. Claude Code names it in `metadata.user_id`: a JSON object with
 * `session_id` in 2.1 (`{"device_id":…,"account_uuid":…,"session_id":…}`), `user_…_account_…_session_<uuid>` before;
 * newer versions also send an `x-claude-code-session-id` header, which wins.
 */
export function claudeSession(body: MessagesRequest, header: string | undefined): string | undefined {
  if (header !== undefined && header !== '') return header.slice(0, 512);
  const uid = body.metadata?.user_id;
  if (typeof uid !== 'string') return undefined;
  try {
    const v: unknown = JSON.parse(uid);
    if (isObj(v) && typeof v.session_id === 'string' && v.session_id !== '') return v.session_id.slice(0, 512);
  } catch {
    // the older flat form
  }
  return /session_([0-9a-zA-Z-]+)/.exec(uid)?.[1];
}

/** A tool_result's content as text (its text blocks; an image is named, not inlined). */
function resultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return (content as unknown[])
    .filter(isObj)
    .map((b) => (b.type === 'text' && typeof b.text === 'string' ? b.text : `[${String(b.type)}]`))
    .join('\n');
}

/** The block types a message can carry to the upstream (thinking is the remote model's, and is dropped on purpose). */
const CARRIED = new Set(['text', 'image', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking']);

/**
 * What is wrong with a request whose message holds only blocks the upstream cannot be given (a `document`, a
 * `search_result`), or null. Such a message would be forwarded empty, and the chat rejected for it with a message
 * that names no block.
 */
export function unsupportedContent(req: MessagesRequest): string | null {
  for (const [i, m] of req.messages.entries()) {
    if (typeof m.content === 'string' || m.content.length === 0) continue;
    const types = (m.content as Obj[]).map((b) => String(b.type));
    if (types.some((t) => CARRIED.has(t))) continue;
    return `messages.${i}.content: block type ${[...new Set(types)].map((t) => JSON.stringify(t)).join(', ')} is not supported by the local model (it reads text, image, tool_use and tool_result blocks)`;
  }
  return null;
}

/**
 * The chat the upstream gets. A user message's tool_result blocks become `role: "tool"` messages (they answer the
 * assistant's calls just before), its other blocks a user message after them; an assistant's tool_use blocks become
 * its `tool_calls`. Thinking blocks are the remote model's and are dropped. The human prompt is the last user
 * message that carries no tool result.
 */
export function messagesToChat(req: MessagesRequest): AgentChat {
  const messages: AgentMessage[] = [];
  let promptAt = -1;
  let prompt = '';
  // System text, the top-level prompt and any system message between the turns, goes first: chat templates take a
  // system message only at the start (Llama 3's and Mistral's raise otherwise).
  const system = [text(req.system as string | Obj[] | undefined), ...req.messages.filter((m) => m.role === 'system').map((m) => text(m.content as string | Obj[]))].filter((t) => t !== '').join('\n\n');
  if (system !== '') messages.push({ role: 'system', content: system });
  for (const m of req.messages) {
    if (m.role === 'system') continue;
    const blocks: Obj[] = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : (m.content as Obj[]);
    if (m.role === 'assistant') {
      const calls = blocks
        .filter((b) => b.type === 'tool_use')
        .map((b) => ({ id: String(b.id ?? ''), type: 'function' as const, function: { name: String(b.name ?? ''), arguments: JSON.stringify(b.input ?? {}) } }));
      messages.push({ role: 'assistant', content: text(blocks), ...(calls.length > 0 ? { tool_calls: calls } : {}) });
      continue;
    }
    const results = blocks.filter((b) => b.type === 'tool_result');
    for (const r of results) {
      const body = resultText(r.content);
      messages.push({ role: 'tool', tool_call_id: String(r.tool_use_id ?? ''), content: r.is_error === true ? `Error: ${body}` : body });
    }
    const parts: Obj[] = [];
    for (const b of blocks) {
      if (b.type === 'text' && typeof b.text === 'string') parts.push({ type: 'text', text: b.text });
      else if (b.type === 'image' && isObj(b.source) && b.source.type === 'base64') {
        parts.push({ type: 'image_url', image_url: { url: `data:${String(b.source.media_type)};base64,${String(b.source.data)}` } });
      }
    }
    if (parts.length === 0) continue;
    const plain = parts.every((p) => p.type === 'text');
    messages.push({ role: 'user', content: plain ? parts.map((p) => p.text as string).join('\n') : parts });
    if (results.length === 0) {
      promptAt = messages.length - 1;
      prompt = humanText(parts.filter((q) => q.type === 'text').map((q) => q.text as string));
    }
  }
  const tools = (req.tools ?? [])
    .filter((t) => isObj(t.input_schema))
    .map((t) => ({ type: 'function', function: { name: t.name, ...(typeof t.description === 'string' ? { description: t.description } : {}), parameters: t.input_schema } }));
  const chat: Obj = { model: req.model, messages, max_tokens: req.max_tokens };
  if (tools.length > 0) chat.tools = tools;
  const tc = req.tool_choice;
  if (tc !== undefined && tools.length > 0) {
    chat.tool_choice = tc.type === 'any' ? 'required' : tc.type === 'tool' ? { type: 'function', function: { name: String(tc.name) } } : tc.type === 'none' ? 'none' : 'auto';
  }
  for (const k of ['temperature', 'top_p', 'top_k'] as const) if (req[k] !== undefined) chat[k] = req[k];
  if (req.stop_sequences !== undefined && req.stop_sequences.length > 0) chat.stop = req.stop_sequences;
  return { chat, promptAt, prompt };
}

/** Anthropic's stop_reason for an OpenAI finish_reason. */
export function stopReason(finish: string | null, calledTools: boolean): string {
  if (calledTools || finish === 'tool_calls') return 'tool_use';
  if (finish === 'length') return 'max_tokens';
  return 'end_turn';
}

const sse = (event: string, data: Obj): string => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/** The tool-call ids the proxy hands out: its own, so a later request's tool_result names a call the proxy made. */
export const newToolUseId = (): string => `toolu_rein_${randomUUID().replaceAll('-', '')}`;

/**
 * Writes one reply as Anthropic's stream: text and tool calls each become a content block, opened when their first
 * piece arrives and stopped when the next block starts or the reply ends.
 */
export class AnthropicStream {
  readonly id = `msg_rein_${randomUUID().replaceAll('-', '')}`;
  /** The tool_use id given to each upstream call index. */
  readonly toolIds = new Map<number, string>();
  private block = -1;
  private open: { kind: 'text' } | { kind: 'tool'; index: number } | null = null;

  private readonly model: string;
  constructor(model: string) {
    this.model = model;
  }

  start(inputTokens: number): string {
    const message = { id: this.id, type: 'message', role: 'assistant', model: this.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: inputTokens, output_tokens: 0 } };
    return sse('message_start', { type: 'message_start', message }) + sse('ping', { type: 'ping' });
  }

  push(ev: ReplyEvent): string {
    let out = '';
    if (ev.type === 'text') {
      if (this.open?.kind !== 'text') out += this.next({ type: 'text', text: '' }, { kind: 'text' });
      return out + sse('content_block_delta', { type: 'content_block_delta', index: this.block, delta: { type: 'text_delta', text: ev.text } });
    }
    if (ev.type === 'tool') {
      const id = newToolUseId();
      this.toolIds.set(ev.index, id);
      return this.next({ type: 'tool_use', id, name: ev.name, input: {} }, { kind: 'tool', index: ev.index });
    }
    // Upstreams stream one call after another; a piece for a call whose block is closed cannot be sent any more.
    if (this.open?.kind !== 'tool' || this.open.index !== ev.index) return '';
    return sse('content_block_delta', { type: 'content_block_delta', index: this.block, delta: { type: 'input_json_delta', partial_json: ev.delta } });
  }

  end(reader: ChatReplyReader): string {
    let out = this.close();
    const stop = stopReason(reader.finishReason, reader.toolCalls.size > 0);
    // The prompt's size too, once the upstream's usage has named it (message_start may have had to say 0).
    const input = reader.promptTokens === null ? {} : { input_tokens: reader.promptTokens };
    out += sse('message_delta', { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { ...input, output_tokens: outputTokens(reader) } });
    return out + sse('message_stop', { type: 'message_stop' });
  }

  /** An error after the stream began: Anthropic's `error` event. */
  error(status: number, message: string): string {
    return `event: error\ndata: ${anthropicError(status, message)}\n\n`;
  }

  private next(block: Obj, open: NonNullable<AnthropicStream['open']>): string {
    const out = this.close() + sse('content_block_start', { type: 'content_block_start', index: ++this.block, content_block: block });
    this.open = open;
    return out;
  }

  private close(): string {
    if (this.open === null) return '';
    this.open = null;
    return sse('content_block_stop', { type: 'content_block_stop', index: this.block });
  }
}

const outputTokens = (r: ChatReplyReader): number => r.completionTokens ?? r.sampled;

/** A call's arguments as the object Anthropic's `input` is; text that is not a JSON object is kept under `_raw`. */
function input(args: string): Obj {
  if (args.trim() === '') return {};
  try {
    const v: unknown = JSON.parse(args);
    return isObj(v) ? v : { _raw: args };
  } catch {
    return { _raw: args };
  }
}

/** The whole reply as one Message object (a request without `stream`). */
export function anthropicMessage(reader: ChatReplyReader, model: string, toolIds: Map<number, string>, inputTokens: number): Obj {
  const content: Obj[] = [];
  if (reader.content !== '') content.push({ type: 'text', text: reader.content });
  for (const [index, c] of reader.toolCalls) {
    let id = toolIds.get(index);
    if (id === undefined) toolIds.set(index, (id = newToolUseId()));
    content.push({ type: 'tool_use', id, name: c.name, input: input(c.arguments) });
  }
  return {
    id: `msg_rein_${randomUUID().replaceAll('-', '')}`,
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: stopReason(reader.finishReason, reader.toolCalls.size > 0),
    stop_sequence: null,
    usage: { input_tokens: inputTokens, output_tokens: outputTokens(reader) },
  };
}
