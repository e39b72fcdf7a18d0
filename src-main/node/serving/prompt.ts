// A chat request's prompt as the model reads it: its messages through the model's own chat template, with the tools
// it declares, tokenised by the model's tokenizer (the same code the trainer uses). The model server samples after
// it; the proxy counts it for Anthropic's count_tokens.
import type { ChatMessage, ReinTokenizer } from '../engine/tokenizer.ts';
import type { ChatRequest } from './openai.ts';

/** The chat's tool declarations, or null when it declares none. */
export const toolsOf = (chat: ChatRequest): unknown[] | null => (Array.isArray(chat.tools) && chat.tools.length > 0 ? chat.tools : null);

/**
 * A chat message as chat templates read it: text content, and an assistant's `tool_calls` with their arguments as
 * an object (transformers' convention; a template writes them with `tojson`), a tool result's id and name.
 */
function templateMessage(m: ChatRequest['messages'][number]): ChatMessage {
  const content = typeof m.content === 'string' ? m.content : (m.content ?? []).map((p) => p.text ?? '').join('');
  const out: ChatMessage = { role: m.role, content };
  const calls = (m as { tool_calls?: unknown }).tool_calls;
  if (Array.isArray(calls) && calls.length > 0) {
    out.tool_calls = calls.map((c: { id?: unknown; function?: { name?: unknown; arguments?: unknown } }) => {
      let args: unknown = c.function?.arguments ?? {};
      if (typeof args === 'string') {
        try {
          args = JSON.parse(args);
        } catch {
          // Not JSON: the template prints the string as it is.
        }
      }
      return { ...(typeof c.id === 'string' ? { id: c.id } : {}), type: 'function', function: { name: String(c.function?.name ?? ''), arguments: args } };
    });
  }
  for (const k of ['tool_call_id', 'name'] as const) {
    const v = (m as Record<string, unknown>)[k];
    if (typeof v === 'string') out[k] = v;
  }
  return out;
}

/** The prompt's token ids, the generation prompt included. */
export function promptIds(tok: ReinTokenizer, chat: ChatRequest): number[] {
  const tools = toolsOf(chat);
  return tok.encodeChat(chat.messages.map(templateMessage), { addGenerationPrompt: true, ...(tools === null ? {} : { tools }) });
}
