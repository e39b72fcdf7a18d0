// Anthropic's `POST /v1/messages/count_tokens` on the proxy: the request is read as a Messages request without
// max_tokens (Anthropic's "Count tokens" reference: model, messages, system, tools, tool_choice, thinking) and its
// prompt counted the way the served model will read it: translated to the chat the upstream gets (anthropic.ts),
// rendered by the model's chat template with the tools, and tokenised by its tokenizer (prompt.ts). Claude Code
// compares it with the context to decide when to compact.
import type { ReinTokenizer } from '../engine/tokenizer.ts';
import { anthropicError, MessagesRequest, messagesToChat, unsupportedContent } from './anthropic.ts';
import { ChatRequest } from './openai.ts';
import { promptIds } from './prompt.ts';
import type { VocabLike } from './tokens.ts';

export const CountTokensRequest = MessagesRequest.omit({ max_tokens: true });

const isTokenizer = (v: VocabLike | null): v is ReinTokenizer => v !== null && typeof (v as Partial<ReinTokenizer>).encodeChat === 'function';

/** The answer: [HTTP status, JSON body]. */
export function countTokens(body: unknown, vocab: VocabLike | null): [number, string] {
  const r = CountTokensRequest.safeParse(body);
  if (!r.success) {
    const i = r.error.issues[0]!;
    return [400, anthropicError(400, `${i.path.map(String).join('.') || 'body'}: ${i.message}`)];
  }
  const req: MessagesRequest = { ...r.data, max_tokens: 1 };
  const unsupported = unsupportedContent(req);
  if (unsupported !== null) return [400, anthropicError(400, unsupported)];
  const chat = ChatRequest.safeParse(messagesToChat(req).chat);
  // No local model (a remote upstream): its tokenizer is not here, and about four characters a token is the estimate.
  if (!isTokenizer(vocab) || !chat.success) return [200, JSON.stringify({ input_tokens: Math.ceil(JSON.stringify([req.system ?? null, req.messages, req.tools ?? null]).length / 4) })];
  return [200, JSON.stringify({ input_tokens: promptIds(vocab, chat.data).length })];
}
