// The upstream model server a proxy forwards to, and what a reply from it says about how it was sampled: the headers
// Rein's own server sets on each reply, and the sampler settings under which another server's logprobs are μ. Both
// proxies (proxy.ts for OpenAI chat, agent-proxy.ts for the agents' own APIs) and the gym read these.
import type { ServerResponse } from 'node:http';

export type UpstreamKind = 'openai' | 'ollama' | 'vllm' | 'llama-server' | 'lmstudio' | 'rein';

export interface Upstream {
  /** The OpenAI base URL, ending in /v1 (http://127.0.0.1:11434/v1). */
  baseUrl: string;
  kind: UpstreamKind;
  /**
   * Sent as `Authorization: Bearer` to the upstream (the client's own Authorization carries the Rein token and is
   * never forwarded). null: none. Left out: the `proxy.upstreamApiKey` setting, except for Rein's own server.
   */
  apiKey?: string | null;
}

/** The response header by which Rein's own model server names the adapter version that produced a reply. */
export const ADAPTER_VERSION_HEADER = 'x-rein-adapter-version';
/** ... and the model (its id, as ratings name it) whose weights and tokenizer produced it. */
export const MODEL_ID_HEADER = 'x-rein-model-id';
/**
 * ... and the distribution it sampled from, `{"temperature":T,"topP":p}` (what it applied, defaults included): its
 * reported logprobs are those of that tempered, truncated distribution (embedded.ts), so they are μ as they stand.
 */
export const SAMPLING_HEADER = 'x-rein-sampling';
/** ... and the weights it sampled from: the served file's weights identity (model-files/weights-id.ts, 64 hex digits). */
export const WEIGHTS_HEADER = 'x-rein-weights';
/** ... and, on a stream, the prompt's size in tokens before the first token (OpenAI's usage comes only at the end). */
export const PROMPT_TOKENS_HEADER = 'x-rein-prompt-tokens';

export interface Sampling {
  temperature: number;
  topP: number;
}


/**
 * An abort controller that fires when the client closes its connection before the reply is finished, so the upstream
 * request stops too; `signal.aborted` tells the caller the client left.
 */
export function abortWhenClientLeaves(res: ServerResponse): AbortController {
  const abort = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) abort.abort();
  });
  return abort;
}

/**
 * The evidence of an `interrupt` signal the proxy saw itself: the client closed the stream of an answer before it
 * ended (what Esc does in Codex and in Claude Code, and Stop in a chat app). `tokens`: how far the answer had come.
 */
export function interruptEvidence(tokens: number | null): string {
  return `the client closed the stream ${tokens === null ? 'before the answer ended' : `after ${tokens} token${tokens === 1 ? '' : 's'} of the answer, before it ended`}`;
}
/**
 * The sampling a reply from another upstream was drawn with when its reported logprobs are μ, or why they are not.
 * Those servers report the model's raw distribution, not the one they sampled from: llama-server reads its
 * probabilities from the logits before the samplers (`post_sampling_probs` is false by default, tools/server/README.md)
 * and samples at temperature 0.8, top_k 40, top_p 0.95 and min_p 0.05 unless told otherwise; vLLM's `--logprobs-mode`
 * is `raw_logprobs` by default (before temperature and truncation) and its sampling defaults come from the model's
 * generation_config.json; Ollama and LM Studio wrap llama.cpp with their own defaults; OpenAI documents neither. Raw
 * logprobs equal the sampled ones only when the sampler is the identity, so the request must pin it: temperature 1
 * and top_p 1, and for the llama.cpp and vLLM families also top_k off (0 or -1) and min_p 0.
 */
export function pinnedSampling(body: Record<string, unknown>, kind: UpstreamKind): Sampling | { reason: string } {
  const unpinned: string[] = [];
  if (body.temperature !== 1) unpinned.push(`temperature ${JSON.stringify(body.temperature ?? 'unset')} (needs 1)`);
  if (body.top_p !== 1) unpinned.push(`top_p ${JSON.stringify(body.top_p ?? 'unset')} (needs 1)`);
  if (kind !== 'openai') {
    if (body.top_k !== 0 && body.top_k !== -1) unpinned.push(`top_k ${JSON.stringify(body.top_k ?? 'unset')} (needs 0 or -1)`);
    if (body.min_p !== 0) unpinned.push(`min_p ${JSON.stringify(body.min_p ?? 'unset')} (needs 0)`);
  }
  if (unpinned.length === 0) return { temperature: 1, topP: 1 };
  return { reason: `the upstream reports the model's raw logprobs, which are the sampled distribution's only at an identity sampler: ${unpinned.join(', ')}` };
}

/** The x-rein-weights header of Rein's own server, or null when it is missing or malformed. */
export function parseWeights(v: unknown): string | null {
  return typeof v === 'string' && /^[0-9a-f]{64}$/.test(v) ? v : null;
}

/** The x-rein-sampling header of Rein's own server, or null when it is missing or malformed. */
export function parseSampling(v: unknown): Sampling | null {
  if (typeof v !== 'string') return null;
  try {
    const s = JSON.parse(v) as Partial<Sampling>;
    const ok = typeof s.temperature === 'number' && s.temperature >= 0 && typeof s.topP === 'number' && s.topP >= 0 && s.topP <= 1;
    return ok ? { temperature: s.temperature!, topP: s.topP! } : null;
  } catch {
    return null;
  }
}
