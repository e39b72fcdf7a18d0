// OpenAI Responses (`POST /v1/responses`, the only wire API Codex speaks: `wire_api = "responses"`) on the capture
// proxy, translated to and from the upstream's chat completions. References: OpenAI's API reference, "Responses:
// create" (input items: messages with input_text / output_text parts, function_call, function_call_output;
// `instructions`; function tools) and "Streaming responses" (response.created, response.in_progress, per output item
// response.output_item.added, then for a message response.content_part.added, response.output_text.delta…,
// response.output_text.done, response.content_part.done, or for a call response.function_call_arguments.delta…,
// response.function_call_arguments.done, then response.output_item.done; and response.completed with usage, or
// response.incomplete; every event with a rising sequence_number).
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { humanText } from './agent-turn.ts';
import type { AgentChat, AgentMessage } from './agent-turn.ts';
import type { ChatReplyReader, ReplyEvent } from './chat-reply.ts';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

export const ResponsesRequest = z.looseObject({
  model: z.string().min(1).max(1024),
  input: z.union([z.string(), z.array(z.looseObject({}))]),
  instructions: z.string().nullable().optional(),
  tools: z.array(z.looseObject({ type: z.string() })).optional(),
  tool_choice: z.union([z.string(), z.looseObject({})]).optional(),
  stream: z.boolean().optional(),
  temperature: z.number().nullable().optional(),
  top_p: z.number().nullable().optional(),
  max_output_tokens: z.number().int().positive().nullable().optional(),
  prompt_cache_key: z.string().optional(),
});
export type ResponsesRequest = z.infer<typeof ResponsesRequest>;

const rid = (prefix: string): string => `${prefix}_rein_${randomUUID().replaceAll('-', '')}`;

function partsText(content: unknown): { text: string; parts: Obj[] | null } {
  if (typeof content === 'string') return { text: content, parts: null };
  if (!Array.isArray(content)) return { text: '', parts: null };
  const parts: Obj[] = [];
  for (const p of content as unknown[]) {
    if (!isObj(p)) continue;
    if ((p.type === 'input_text' || p.type === 'output_text' || p.type === 'text') && typeof p.text === 'string') parts.push({ type: 'text', text: p.text });
    else if (p.type === 'input_image' && typeof p.image_url === 'string') parts.push({ type: 'image_url', image_url: { url: p.image_url } });
  }
  const plain = parts.every((p) => p.type === 'text');
  const text = parts.filter((p) => p.type === 'text').map((p) => p.text as string).join('\n');
  return { text, parts: plain ? null : parts };
}

/**
 * The chat the upstream gets: `instructions` and system or developer messages become system messages; a run of
 * function_call items (and the assistant message before them) one assistant message with tool_calls; each
 * function_call_output a tool message. Reasoning items are the remote model's and are dropped. The human prompt is
 * the last user message.
 */
export function responsesToChat(req: ResponsesRequest): AgentChat {
  const messages: AgentMessage[] = [];
  let promptAt = -1;
  let prompt = '';
  if (typeof req.instructions === 'string' && req.instructions !== '') messages.push({ role: 'system', content: req.instructions });
  const items: Obj[] = typeof req.input === 'string' ? [{ type: 'message', role: 'user', content: req.input }] : (req.input as Obj[]);
  for (const it of items) {
    const type = it.type ?? (typeof it.role === 'string' ? 'message' : undefined);
    if (type === 'message') {
      const role = it.role === 'developer' || it.role === 'system' ? 'system' : it.role === 'assistant' ? 'assistant' : 'user';
      const { text, parts } = partsText(it.content);
      messages.push({ role, content: parts ?? text });
      // Codex sends its context (<environment_context>, <user_instructions>) as user messages of their own.
      const own = humanText([text]);
      if (role === 'user' && (promptAt < 0 || own === text.trim())) {
        promptAt = messages.length - 1;
        prompt = own;
      }
    } else if (type === 'function_call') {
      const call = { id: String(it.call_id ?? ''), type: 'function' as const, function: { name: String(it.name ?? ''), arguments: typeof it.arguments === 'string' ? it.arguments : JSON.stringify(it.arguments ?? {}) } };
      const last = messages.at(-1);
      if (last?.role === 'assistant') (last.tool_calls ??= []).push(call);
      else messages.push({ role: 'assistant', content: '', tool_calls: [call] });
    } else if (type === 'function_call_output') {
      const out = typeof it.output === 'string' ? it.output : partsText(it.output).text;
      messages.push({ role: 'tool', tool_call_id: String(it.call_id ?? ''), content: out });
    }
  }
  const tools = (req.tools ?? [])
    .filter((t) => t.type === 'function' && typeof t.name === 'string')
    .map((t) => ({ type: 'function', function: { name: t.name, ...(typeof t.description === 'string' ? { description: t.description } : {}), parameters: isObj(t.parameters) ? t.parameters : { type: 'object', properties: {} } } }));
  const chat: Obj = { model: req.model, messages };
  if (tools.length > 0) chat.tools = tools;
  const tc = req.tool_choice;
  if (tc !== undefined && tools.length > 0) chat.tool_choice = isObj(tc) && typeof tc.name === 'string' ? { type: 'function', function: { name: tc.name } } : tc;
  if (typeof req.temperature === 'number') chat.temperature = req.temperature;
  if (typeof req.top_p === 'number') chat.top_p = req.top_p;
  if (typeof req.max_output_tokens === 'number') chat.max_tokens = req.max_output_tokens;
  return { chat, promptAt, prompt };
}

/** The Codex session a request belongs to: its `session_id` (or `conversation_id`) header, else prompt_cache_key. */
export function codexSession(req: ResponsesRequest, header: string | undefined): string | undefined {
  if (header !== undefined && header !== '') return header.slice(0, 512);
  return typeof req.prompt_cache_key === 'string' && req.prompt_cache_key !== '' ? req.prompt_cache_key.slice(0, 512) : undefined;
}

/** OpenAI's error body. */
export function responsesError(status: number, message: string, code?: string): string {
  const type = status === 401 ? 'invalid_api_key' : status >= 500 ? 'server_error' : 'invalid_request_error';
  return JSON.stringify({ error: { message, type, param: null, code: code ?? type } });
}

interface OpenItem {
  index: number;
  item: Obj;
  /** The upstream call index of a function_call item. */
  call: number | null;
  /**
   * A message item's text so far, one piece per delta, joined once into one flat string when the item is done and
   * the pieces dropped (`+=` on the part's text built a rope of one node per delta, left to the first JSON.stringify
   * to flatten while the rope was still held).
   */
  pieces: string[];
}

/**
 * Writes one reply as Responses events. Output items open when their first piece arrives and are done when the next
 * one starts or the reply ends; the response object of response.completed lists them all. The closing events each
 * repeat the whole text, so end() yields them one at a time, for the caller to write each once the client has taken
 * the one before, and then drops the text.
 */
export class ResponsesStream {
  readonly id = rid('resp');
  /** The call_id given to each upstream call index. */
  readonly callIds = new Map<number, string>();
  private seq = 0;
  private readonly created = Math.floor(Date.now() / 1000);
  private readonly output: Obj[] = [];
  private open: OpenItem | null = null;

  private readonly model: string;
  constructor(model: string) {
    this.model = model;
  }

  start(): string {
    const r = this.response('in_progress', []);
    return this.ev('response.created', { response: r }) + this.ev('response.in_progress', { response: r });
  }

  push(ev: ReplyEvent): string {
    let out = '';
    if (ev.type === 'text') {
      if (this.open?.item.type !== 'message') {
        const item = { id: rid('msg'), type: 'message', status: 'in_progress', role: 'assistant', content: [] as Obj[] };
        out += this.next(item, null);
        out += this.ev('response.content_part.added', { item_id: item.id, output_index: this.open!.index, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } });
        item.content.push({ type: 'output_text', text: '', annotations: [] });
      }
      const o = this.open!;
      o.pieces.push(ev.text);
      return out + this.ev('response.output_text.delta', { item_id: o.item.id, output_index: o.index, content_index: 0, delta: ev.text, logprobs: [] });
    }
    if (ev.type === 'tool') {
      const callId = rid('call');
      this.callIds.set(ev.index, callId);
      return this.next({ id: rid('fc'), type: 'function_call', status: 'in_progress', call_id: callId, name: ev.name, arguments: '' }, ev.index);
    }
    // Upstreams stream one call after another; a piece for a call already done cannot be sent any more.
    if (this.open?.call !== ev.index) return '';
    this.open.item.arguments += ev.delta;
    return this.ev('response.function_call_arguments.delta', { item_id: this.open.item.id, output_index: this.open.index, delta: ev.delta });
  }

  /** The closing events, each built when it is asked for; the reply's items (and their text) are dropped after. */
  *end(reader: ChatReplyReader): Generator<string> {
    try {
      yield* this.close();
      const incomplete = reader.finishReason === 'length' && reader.toolCalls.size === 0;
      yield this.ev(incomplete ? 'response.incomplete' : 'response.completed', { response: this.response(incomplete ? 'incomplete' : 'completed', this.output, reader) });
    } finally {
      this.output.length = 0;
      this.open = null;
    }
  }

  /** An error after the stream began: response.failed, so the client stops waiting for response.completed. */
  error(message: string, code = 'server_error'): string {
    // The open message's text so far, as the failed response lists it.
    if (this.open?.item.type === 'message') (this.open.item.content as Obj[])[0]!.text = this.open.pieces.join('');
    return this.ev('response.failed', { response: { ...this.response('failed', this.output), error: { code, message } } });
  }

  /** The whole reply as one response object (a request without `stream`). */
  whole(reader: ChatReplyReader): Obj {
    const output: Obj[] = [];
    if (reader.content !== '') output.push({ id: rid('msg'), type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: reader.content, annotations: [] }] });
    for (const [index, c] of reader.toolCalls) {
      let callId = this.callIds.get(index);
      if (callId === undefined) this.callIds.set(index, (callId = rid('call')));
      output.push({ id: rid('fc'), type: 'function_call', status: 'completed', call_id: callId, name: c.name, arguments: c.arguments });
    }
    const incomplete = reader.finishReason === 'length' && reader.toolCalls.size === 0;
    return this.response(incomplete ? 'incomplete' : 'completed', output, reader);
  }

  private response(status: string, output: Obj[], reader?: ChatReplyReader): Obj {
    const r: Obj = { id: this.id, object: 'response', created_at: this.created, status, model: this.model, output, error: null, incomplete_details: null };
    if (status === 'incomplete') r.incomplete_details = { reason: 'max_output_tokens' };
    if (reader !== undefined) {
      const input = reader.promptTokens ?? 0;
      const output = reader.completionTokens ?? reader.sampled;
      r.usage = { input_tokens: input, input_tokens_details: { cached_tokens: 0 }, output_tokens: output, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: input + output };
    }
    return r;
  }

  private ev(type: string, data: Obj): string {
    return `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: this.seq++, ...data })}\n\n`;
  }

  private next(item: Obj, call: number | null): string {
    const out = [...this.close()].join('');
    this.open = { index: this.output.length, item, call, pieces: [] };
    this.output.push(item);
    return out + this.ev('response.output_item.added', { output_index: this.open.index, item: structuredClone(item) });
  }

  private *close(): Generator<string> {
    const o = this.open;
    if (o === null) return;
    this.open = null;
    o.item.status = 'completed';
    if (o.item.type === 'message') {
      const part = (o.item.content as Obj[])[0]!;
      part.text = o.pieces.join('');
      o.pieces.length = 0;
      yield this.ev('response.output_text.done', { item_id: o.item.id, output_index: o.index, content_index: 0, text: part.text, logprobs: [] });
      yield this.ev('response.content_part.done', { item_id: o.item.id, output_index: o.index, content_index: 0, part });
    } else {
      yield this.ev('response.function_call_arguments.done', { item_id: o.item.id, output_index: o.index, arguments: o.item.arguments });
    }
    yield this.ev('response.output_item.done', { output_index: o.index, item: o.item });
  }
}
