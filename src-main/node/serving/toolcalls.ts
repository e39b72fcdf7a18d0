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
