// An AgentBackend on Rein's own engine (ONNX Runtime) with an adapter held in memory: the env gate (session.ts
// gateOn) plays a round's candidate and its parent through it before either is written as a version, so neither is
// served by the model server yet. The same weights and the same sampler (common/engine/sampling.ts pick) as the
// model server; it only plays (record and train refuse).
import type { LoraAdapter } from '../../common/engine/lora.ts';
import type { Engine } from '../engine/engine.ts';
import type { ReinTokenizer } from '../engine/tokenizer.ts';
import type { AgentBackend, ChatMessage, RecordedStep, RoundStats, Sample, SampleOptions } from './backend.ts';

/** One reply as sampled: the prompt's ids, the tokens drawn and μ. */
export interface EngineStep {
  prompt: number[];
  tokens: number[];
  logprobs: number[];
}

export class EngineBackend implements AgentBackend {
  readonly engine: Engine;
  readonly tokenBudget: number;
  /** The adapter that samples (null: the base). */
  adapter: LoraAdapter | null = null;
  /** When an array, each reply is appended to it (the env gate measures KL on the parent's tokens). */
  steps: EngineStep[] | null = null;
  private readonly tok: ReinTokenizer;
  private readonly modelId: string;

  constructor(engine: Engine, tokenBudget: number, modelId: string) {
    if (engine.tokenizer === null) throw new Error('the env gate needs a model with a tokenizer');
    this.engine = engine;
    this.tok = engine.tokenizer;
    this.tokenBudget = tokenBudget;
    this.modelId = modelId;
  }

  promptTokens(messages: readonly ChatMessage[]): number {
    return this.encode(messages).length;
  }

  private encode(messages: readonly ChatMessage[]): number[] {
    return this.tok.encodeChat(messages.map((m) => ({ role: m.role, content: m.content })), { addGenerationPrompt: true });
  }

  async sample(messages: readonly ChatMessage[], o: SampleOptions): Promise<Sample> {
    const prompt = this.encode(messages);
    const s = await this.engine.sample(prompt, { adapter: this.adapter, temperature: o.temperature, topP: o.topP, maxTokens: o.maxTokens, seed: o.seed });
    this.steps?.push({ prompt, tokens: s.tokens, logprobs: s.logprobs });
    const eos = new Set(this.engine.config.eosTokenIds);
    const text = this.tok.decode(s.tokens.filter((t) => !eos.has(t)));
    return { text, tokens: s.tokens, logprobs: s.logprobs, modelId: this.modelId, version: -1, temperature: o.temperature, topP: o.topP };
  }

  record(_episode: string, _steps: readonly RecordedStep[]): Promise<void> {
    return Promise.reject(new Error('the env gate only plays: nothing it samples is stored'));
  }

  train(): Promise<RoundStats> {
    return Promise.reject(new Error('the env gate only plays: it does not train'));
  }
}
