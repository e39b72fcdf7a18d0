// An agent turn through the proxy's agent endpoints (anthropic.ts, responses.ts): the human prompt, then the steps
// the local model took (each a reply of its own: text and tool calls, then the tools' results), then its answer.
// Each reply is one request to the upstream, so a turn is stored once, when a reply ends with no tool call: its
// request holds the whole turn, and the tokens and μ of the earlier replies were kept when they ended, under the
// tool-call ids the proxy handed out for them (so a later request's results name them exactly).
//
// The stored shape is the Claude hooks' (integrations/claude/transcript.ts; training/data.ts STEPS_AFTER_PROMPT):
// `prompt` is the human text, `context` the steps after it, one message per block ({role: 'assistant', content} for
// text, {role: 'assistant', type: 'tool_use', name, content: the arguments' JSON} for a call, {role: 'tool', type:
// 'tool_result', content} for a result), and `response` the answer. The first message of every step carries that
// reply's sampled `tokens` and their `logprobs` μ; the answer's are the turn's own tokens and logprobs.
import type { ContextMessage } from '../../common/domain.ts';

export interface AgentToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** One message of the chat sent upstream (OpenAI chat completions). */
export interface AgentMessage {
  role: string;
  content: string | Record<string, unknown>[];
  tool_calls?: AgentToolCall[];
  tool_call_id?: string;
}

/** A translated request: the upstream chat body, and where in its messages the human prompt is (-1: none). */
export interface AgentChat {
  chat: Record<string, unknown> & { messages?: AgentMessage[] };
  promptAt: number;
  /** The human's own text of that message, without the context blocks the agent adds to it. */
  prompt: string;
}

/**
 * The human's text among a user message's text blocks: agents add their own context as blocks wrapped in a tag
 * (Claude Code's `<system-reminder>`, Codex's `<environment_context>`), so those are left out, unless nothing else is.
 */
export function humanText(blocks: readonly string[]): string {
  const own = blocks.filter((t) => !/^\s*<[a-z_-]+>[\s\S]*<\/[a-z_-]+>\s*$/i.test(t));
  return (own.length > 0 ? own : blocks).join('\n').trim();
}

/** The sampled tokens of one reply and their μ, or why there are none. */
export type Segment = { tokens: number[]; logprobs: number[] } | { offPolicy: string };

const textOf = (c: AgentMessage['content']): string =>
  typeof c === 'string' ? c : c.filter((p) => p.type === 'text' && typeof p.text === 'string').map((p) => p.text as string).join('\n');

/**
 * The agent's working directory, as Claude Code's environment block names it ("Primary working directory: /p" in a
 * `<system-reminder>` beside the prompt since 2.1; "Working directory: /p" in the system prompt before), read from
 * the system messages and the user's text up to the human prompt (never a tool's output). The files the turn's edits
 * changed are watched inside it for a revert (node/core/edit-watch.ts); undefined when it names none.
 */
export function agentCwd(req: AgentChat): string | undefined {
  const msgs = req.chat.messages ?? [];
  const end = req.promptAt < 0 ? msgs.length : req.promptAt + 1;
  for (const [i, m] of msgs.entries()) {
    if (m.role !== 'system' && !(m.role === 'user' && i < end)) continue;
    const cwd = /^\s*(?:- )?(?:Primary working directory|Working directory): (\/[^\n]*?|[A-Za-z]:\\[^\n]*?)\s*$/mu.exec(textOf(m.content))?.[1];
    if (cwd !== undefined) return cwd;
  }
  return undefined;
}

/**
 * Whether the request carries a new human prompt, not a step of a turn under way: nothing the model or a tool wrote
 * comes after the prompt (Claude Code adds its environment as a system message after it).
 */
export function isNewPrompt(req: AgentChat): boolean {
  const msgs = req.chat.messages ?? [];
  return req.promptAt >= 0 && msgs.slice(req.promptAt + 1).every((m) => m.role !== 'assistant' && m.role !== 'tool');
}

export interface AgentTurn {
  prompt: string;
  context: ContextMessage[];
  /** Why the steps' tokens are not all known (a step from before Rein, or a reply without logprobs), or null. */
  stepsOffPolicy: string | null;
}

/**
 * The turn a final reply ends. `segments` finds the reply that made a call by its id. Null when the request has no
 * human prompt (a title or a probe request an agent makes on its own).
 */
export function agentTurn(req: AgentChat, segments: (toolCallId: string) => Segment | undefined): AgentTurn | null {
  const msgs = req.chat.messages ?? [];
  if (req.promptAt < 0) return null;
  const prompt = req.prompt;
  const context: ContextMessage[] = [];
  const names = new Map<string, string>();
  let stepsOffPolicy: string | null = null;
  for (const m of msgs.slice(req.promptAt + 1)) {
    if (m.role === 'assistant') {
      const first = context.length;
      const text = textOf(m.content);
      if (text !== '') context.push({ role: 'assistant', content: text });
      for (const c of m.tool_calls ?? []) {
        names.set(c.id, c.function.name);
        context.push({ role: 'assistant', type: 'tool_use', name: c.function.name, content: c.function.arguments });
      }
      const id = m.tool_calls?.[0]?.id;
      const seg = id === undefined ? undefined : segments(id);
      if (seg !== undefined && 'tokens' in seg && context.length > first) Object.assign(context[first]!, { tokens: seg.tokens, logprobs: seg.logprobs });
      else stepsOffPolicy ??= seg !== undefined && 'offPolicy' in seg ? seg.offPolicy : 'a step was not sampled through this proxy';
    } else if (m.role === 'tool') {
      const name = m.tool_call_id === undefined ? undefined : names.get(m.tool_call_id);
      context.push({ role: 'tool', type: 'tool_result', ...(name === undefined ? {} : { name }), content: textOf(m.content) });
    } else if (m.role === 'user') {
      // Text an agent adds beside its tool results (Claude Code's reminders): context the model saw.
      context.push({ role: 'user', content: textOf(m.content) });
    }
  }
  return { prompt, context, stepsOffPolicy };
}

/** The segments of replies that made calls, by call id; the oldest go first past `max`. */
export class SegmentMemory {
  private readonly map = new Map<string, Segment>();
  private readonly max: number;
  constructor(max = 10_000) {
    this.max = max;
  }

  set(ids: readonly string[], seg: Segment): void {
    for (const id of ids) {
      this.map.delete(id);
      this.map.set(id, seg);
    }
    while (this.map.size > this.max) this.map.delete(this.map.keys().next().value!);
  }

  get(id: string): Segment | undefined {
    return this.map.get(id);
  }
}
