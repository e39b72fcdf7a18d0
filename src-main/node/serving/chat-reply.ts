// One chat completion read as it streams (or whole), for the agent endpoints (anthropic.ts, responses.ts) that
// translate it into another wire format: choice 0's text, its tool calls (OpenAI `delta.tool_calls[]`, each call's
// `function.arguments` arriving in pieces under a stable `index`), its finish reason, usage, and the sampled tokens'
// logprobs (`logprobs.content[]`), which are μ when the upstream's sampling is known (proxy.ts pinnedSampling).
import type { LogprobEntry } from './openai.ts';
import { entriesOf } from './openai.ts';

/** What a translator writes next: text, the start of a tool call, or a piece of its arguments. */
export type ReplyEvent =
  | { type: 'text'; text: string }
  | { type: 'tool'; index: number; name: string }
  | { type: 'args'; index: number; delta: string };

export interface ReplyToolCall {
  name: string;
  arguments: string;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

export class ChatReplyReader {
  model: string | null = null;
  content = '';
  /** By the upstream's `index`, in the order they started. */
  readonly toolCalls = new Map<number, ReplyToolCall>();
  finishReason: string | null = null;
  entries: LogprobEntry[] = [];
  /**
   * False once a chunk carried text without readable logprobs. A call's pieces are the upstream's parse of sampled
   * text and may come apart from the logprobs of that text; agent-proxy.ts checks that those spell the calls.
   */
  logprobsComplete = true;
  promptTokens: number | null = null;
  /** The prompt's ids as the upstream consumed them (`prompt_token_ids`, on `return_token_ids`), or null. */
  promptIds: number[] | null = null;
  completionTokens: number | null = null;
  /**
   * False once the reply passed what is kept of it for its capture (upstream-limit.ts CaptureBudget): its events are
   * still read and translated, but its text, call arguments and logprobs are no longer collected.
   */
  keeping = true;
  /** Tokens that came with logprobs, kept or not (the usage when the upstream reports none). */
  sampled = 0;
  /** Arguments that came before their call's name (the start is written once the name is known). */
  private readonly early = new Map<number, string>();

  /** A streamed chunk (`choices[0].delta`). */
  chunk(obj: unknown): ReplyEvent[] {
    return this.read(obj, 'delta');
  }

  /** A whole reply (`choices[0].message`), as the events a stream of it would have given. */
  reply(obj: unknown): ReplyEvent[] {
    return this.read(obj, 'message');
  }

  calls(): ReplyToolCall[] {
    return [...this.toolCalls.values()];
  }

  private read(obj: unknown, field: 'delta' | 'message'): ReplyEvent[] {
    if (!isObj(obj)) return [];
    if (typeof obj.model === 'string' && this.model === null) this.model = obj.model;
    if (this.promptIds === null && Array.isArray(obj.prompt_token_ids) && obj.prompt_token_ids.every((t) => Number.isInteger(t) && (t as number) >= 0)) {
      this.promptIds = obj.prompt_token_ids as number[];
    }
    if (isObj(obj.usage)) {
      if (typeof obj.usage.prompt_tokens === 'number') this.promptTokens = obj.usage.prompt_tokens;
      if (typeof obj.usage.completion_tokens === 'number') this.completionTokens = obj.usage.completion_tokens;
    }
    const out: ReplyEvent[] = [];
    if (!Array.isArray(obj.choices)) return out;
    for (const c of obj.choices as unknown[]) {
      if (!isObj(c) || (c.index ?? 0) !== 0) continue;
      const m = isObj(c[field]) ? (c[field] as Obj) : {};
      let carried = false;
      if (typeof m.content === 'string' && m.content !== '') {
        if (this.keeping) this.content += m.content;
        out.push({ type: 'text', text: m.content });
        carried = true;
      }
      if (Array.isArray(m.tool_calls)) {
        for (const [pos, tc] of (m.tool_calls as unknown[]).entries()) {
          if (!isObj(tc)) continue;
          const index = Number.isInteger(tc.index) ? (tc.index as number) : pos;
          const fn = isObj(tc.function) ? tc.function : {};
          const args = typeof fn.arguments === 'string' ? fn.arguments : isObj(fn.arguments) ? JSON.stringify(fn.arguments) : '';
          let call = this.toolCalls.get(index);
          if (call === undefined && typeof fn.name === 'string' && fn.name !== '') {
            call = { name: fn.name, arguments: '' };
            this.toolCalls.set(index, call);
            out.push({ type: 'tool', index, name: fn.name });
            const before = this.early.get(index);
            if (before !== undefined) {
              this.early.delete(index);
              call.arguments += before;
              out.push({ type: 'args', index, delta: before });
            }
          }
          if (args !== '') {
            if (call === undefined) this.early.set(index, (this.early.get(index) ?? '') + args);
            else {
              if (this.keeping) call.arguments += args;
              out.push({ type: 'args', index, delta: args });
            }
          }
        }
      }
      if (typeof c.finish_reason === 'string') this.finishReason = c.finish_reason;
      const e = entriesOf(c.logprobs);
      if (e !== null) {
        this.sampled += e.length;
        if (this.keeping) this.entries.push(...e);
      }
      else if (carried) this.logprobsComplete = false;
    }
    return out;
  }
}
