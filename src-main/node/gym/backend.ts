// What an Agent needs from Rein, as an interface: sample a reply with its tokens and μ, count a chat's prompt tokens,
// store a finished episode's steps as rated turns, and train a round. session.ts implements it on a Rein home (the
// model server with the active adapter, the core's store, the scheduler and trainer worker); tests of the Agent's own
// bookkeeping may script it.

import type { TrainingProgress } from '../../common/domain.ts';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface SampleOptions {
  maxTokens: number;
  temperature: number;
  topP: number;
  seed: number;
}

/** One sampled reply: its text, the token ids drawn, and μ (each token's logprob under the distribution it was drawn from). */
export interface Sample {
  text: string;
  tokens: number[];
  logprobs: number[];
  /** The model id ratings use (the producing base), the adapter version that sampled, and the sampling. */
  modelId: string;
  version: number;
  temperature: number;
  topP: number;
  /** The weights identity of the file that sampled it (model-files/weights-id.ts), when known. */
  weights?: string;
}

/** One step as the agent stores it: the chat before the reply, the reply, and the step's credit. */
export interface RecordedStep {
  messages: ChatMessage[];
  sample: Sample;
  /** The discounted return from this step (Agent.terminateEpisode). */
  credit: number;
}

export interface RoundStats {
  runId: number;
  /** succeeded / failed (the run), and the new version's status: active, rejected, or failed when none was written. */
  run: string;
  version: number | null;
  status: string;
  reason: string | null;
  /** The gate's held-out preference accuracy, KL to the parent and its budget. */
  accuracy: number | null;
  kl: number | null;
  klBudget: number | null;
  /** The gate kind (common/training/gate.ts): held-out rated turns, or held-out env episodes (the gym's). */
  gate?: 'ratings' | 'env';
  /** The env gate's paired comparison: mean returns of candidate and parent, its change with the 95% CI, wins. */
  envGate?: { episodes: number; candidate: number; parent: number; change: { mean: number; ci: [number, number] }; candidateWins: number; parentWins: number; klTokens: number } | null;
  /** Pending ratings the round trained (its held-out share excluded) and the steps it ran. */
  trained: number;
  steps: number;
  seconds: number;
}

export interface AgentBackend {
  sample(messages: readonly ChatMessage[], o: SampleOptions): Promise<Sample>;
  /** Tokens of the chat as the model server renders it, with the assistant's generation prompt. */
  promptTokens(messages: readonly ChatMessage[]): number;
  /** The most tokens a prompt plus its reply may take and still train on-policy (the serving context and the preset's maxTokens). */
  readonly tokenBudget: number;
  /** Stores an episode's steps as turns rated with their credit; `episode` names the session they share. */
  record(episode: string, steps: readonly RecordedStep[]): Promise<void>;
  /** Trains one round on the pending ratings through the scheduler; resolves when it has finished. */
  train(onProgress?: (p: TrainingProgress) => void): Promise<RoundStats>;
}
