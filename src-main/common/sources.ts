// The `source` a captured turn carries for each agent integration (turns.source): the hooks in node/integrations/
// write them, and training (node/training/data.ts) reads them to know how a turn's context is ordered.
import type { ContextMessage } from './domain.ts';

export const CLAUDE_SOURCE = 'claude-code';
export const CODEX_SOURCE = 'codex';
export const OPENCLAW_SOURCE = 'openclaw';

/**
 * Sources whose `context` holds the turn's own steps, after the prompt: the Claude transcript gives the assistant's
 * text, its tool calls and their results between the human prompt and the final answer (integrations/claude/
 * transcript.ts), and the proxy's agent endpoints store Claude Code's and Codex's turns the same way
 * (serving/agent-turn.ts; Codex's hooks store no context). Every other source stores the conversation before the
 * prompt (the proxy's chat completions: the request's earlier messages).
 */
export const STEPS_AFTER_PROMPT = new Set([CLAUDE_SOURCE, CODEX_SOURCE]);

/** The chat up to the response, in the order it happened. */
export function turnMessages(t: { source: string; context: readonly ContextMessage[]; prompt: string }): ContextMessage[] {
  const prompt: ContextMessage = { role: 'user', content: t.prompt };
  return STEPS_AFTER_PROMPT.has(t.source) ? [prompt, ...t.context] : [...t.context, prompt];
}
