// LlamaGym's Agent (github.com/KhoomeiK/LlamaGym) on Rein: subclass it with getSystemPrompt, formatObservation and
// extractAction, then loop act(obs) → env.step(action) → assignReward(r) until the episode ends, and call
// terminateEpisode(), which trains a round when `batchEpisodes` episodes are waiting.
//
// What differs from LlamaGym, and why:
// - Sampling goes through Rein's model server with the active adapter (backend.ts, session.ts), and every reply keeps
//   its token ids and μ, the logprob of each token under the distribution it was actually drawn from (after
//   temperature and top-p). At the default temperature 1 and top-p 1 that makes each step an on-policy turn: MIS-PO's
//   ratio π/μ is an importance weight only against the true proposal (a step drawn otherwise trains as KTO:
//   training/data.ts samplingReason).
// - Credit per step is the discounted return from that step, G_t = r_t + γ·G_{t+1}, not the episode's reward spread
//   evenly over its turns: an action can only change the rewards after it (the policy-gradient theorem, Sutton &
//   Barto §13.3), so crediting it with earlier rewards adds variance and no signal. Each step is stored as a turn
//   rated with G_t; the round subtracts the reward baseline as it does for every rating (the mean credit of the
//   round's other on-policy turns, common/rewards.ts roundBaselines): A_t = G_t − b. A baseline that does not depend
//   on the action leaves the gradient unbiased and cuts its variance; the other steps of the same episode are in it,
//   and their credit depends on this step's action, a bias of the order of an episode's steps over the round's (as
//   with any round-wide baseline). It is not divided by the round's spread.
// - Training is a Rein round (round.ts runRound through the scheduler): the same versions, eval gate, progress
//   events and dashboard as ratings, so a gym round can be rejected, rolled back and inspected like any other.
// - A reply extractAction cannot read (it returns null or undefined, throws, or names an action the env does not
//   list) costs `invalidPenalty` on that step's reward and plays `defaultAction`; it is counted, never a crash.
// - A chat that outgrows the token budget drops its oldest exchanges (after the system prompt) before sampling, so
//   what trains is exactly what was sampled from; when even the system prompt and the newest observation do not fit,
//   the step plays `defaultAction` untrained. Both are counted.
import type { AgentBackend, ChatMessage, RecordedStep, RoundStats, Sample } from './backend.ts';
import type { TrainingProgress } from '../../common/domain.ts';

export interface AgentOptions<Action> {
  /** The action played when a reply cannot be read. */
  defaultAction: Action;
  /** The env's actions (Env.actions): an extracted action outside the list counts as unreadable. */
  actions?: readonly Action[];
  /** Added to the step's reward when its reply cannot be read (default −1: a loss, for ±1 games). */
  invalidPenalty?: number;
  /** Discount γ of the per-step return (default 1: Gymnasium's toy games are episodic and short). */
  gamma?: number;
  /** Episodes per training round (default 16). */
  batchEpisodes?: number;
  /**
   * Episodes played in a row from the same env seed (default 1). With more, each step's credit is its return less
   * the mean return of the group's other episodes (a leave-one-out group baseline: see terminateEpisode); the caller
   * plays each seed this many times in a row (runner.ts trainAgent and runGym do) and names it to terminateEpisode.
   */
  groupSize?: number;
  /** Reply length in tokens (default 16). */
  maxTokens?: number;
  temperature?: number;
  topP?: number;
  /** Seeds the sampler's draws (default 0): the same seed, env seeds and adapter give the same episodes. */
  seed?: number;
  onProgress?: (p: TrainingProgress) => void;
}

export interface AgentStats {
  episodes: number;
  steps: number;
  /** Replies extractAction could not read (penalised, default action played). */
  invalid: number;
  /** Steps whose chat dropped older exchanges to fit the token budget. */
  trimmed: number;
  /** Steps played with the default action untrained because even the newest observation did not fit. */
  overlong: number;
  /** Episodes abandoned because the env threw, with the first reasons. */
  envErrors: number;
  envErrorReasons: string[];
  rounds: number;
}

interface PendingStep {
  messages: ChatMessage[];
  sample: Sample | null;
  reward: number;
}

export abstract class Agent<Obs, Action> {
  readonly options: Required<Omit<AgentOptions<Action>, 'actions' | 'onProgress'>> & Pick<AgentOptions<Action>, 'actions' | 'onProgress'>;
  /** Whether act() samples for training (episodes are stored and rounds run) or only plays (evaluation). */
  training = true;
  private messages: ChatMessage[] = [];
  private steps: PendingStep[] = [];
  private episodes: RecordedStep[][] = [];
  /** The finished episodes of the group being played (groupSize > 1): their steps, returns and the group's seed. */
  private group: { key: number | undefined; episodes: { steps: PendingStep[]; credit: number[] }[] } = { key: undefined, episodes: [] };
  private draws = 0;
  private episodeCount = 0;
  readonly stats: AgentStats = { episodes: 0, steps: 0, invalid: 0, trimmed: 0, overlong: 0, envErrors: 0, envErrorReasons: [], rounds: 0 };

  protected readonly backend: AgentBackend;
  /** Where act() samples: the agent's backend, or another one for a while (playWith: the env gate's candidate and parent). */
  private sampler: AgentBackend;

  constructor(backend: AgentBackend, o: AgentOptions<Action>) {
    this.backend = backend;
    this.sampler = backend;
    this.options = {
      defaultAction: o.defaultAction,
      actions: o.actions,
      invalidPenalty: o.invalidPenalty ?? -1,
      gamma: o.gamma ?? 1,
      batchEpisodes: o.batchEpisodes ?? 16,
      groupSize: o.groupSize ?? 1,
      maxTokens: o.maxTokens ?? 16,
      temperature: o.temperature ?? 1,
      topP: o.topP ?? 1,
      seed: o.seed ?? 0,
      onProgress: o.onProgress,
    };
    if (!(this.options.gamma >= 0 && this.options.gamma <= 1)) throw new RangeError(`gamma must be in [0, 1], got ${this.options.gamma}`);
    if (!Number.isInteger(this.options.groupSize) || this.options.groupSize < 1) throw new RangeError(`groupSize must be a positive integer, got ${this.options.groupSize}`);
    if (!Number.isInteger(this.options.batchEpisodes) || this.options.batchEpisodes < 1) throw new RangeError(`batchEpisodes must be a positive integer, got ${this.options.batchEpisodes}`);
    if (!Number.isFinite(this.options.invalidPenalty)) throw new RangeError(`invalidPenalty must be a finite number, got ${this.options.invalidPenalty}`);
  }

  abstract getSystemPrompt(): string;
  abstract formatObservation(obs: Obs): string;
  /** The action a reply names, or null when it names none. */
  abstract extractAction(text: string): Action | null | undefined;

  /** The chat of the episode so far (system prompt first). */
  get conversation(): readonly ChatMessage[] {
    return this.messages;
  }

  /**
   * The episode's return so far as training credits it: the env's rewards plus `invalidPenalty` for each unreadable
   * reply (undiscounted). The env gate compares candidates on this, the reward the rounds optimise.
   */
  get shapedReturn(): number {
    return this.steps.reduce((s, x) => s + x.reward, 0);
  }

  /** Episodes finished and waiting for the next round. */
  get waitingEpisodes(): number {
    return this.episodes.length;
  }

  private readAction(text: string): Action | null {
    let a: Action | null | undefined;
    try {
      a = this.extractAction(text);
    } catch {
      return null;
    }
    if (a === null || a === undefined) return null;
    if (this.options.actions !== undefined && !this.options.actions.includes(a)) return null;
    return a;
  }

  /** The chat to sample from: the episode's messages with the oldest exchanges dropped until it fits, or null. */
  private fitted(): ChatMessage[] | null {
    const budget = this.sampler.tokenBudget - this.options.maxTokens;
    const [system, ...rest] = this.messages;
    let kept = rest;
    let chat = [system!, ...kept];
    while (this.sampler.promptTokens(chat) > budget) {
      if (kept.length <= 1) return null;
      // Drop the oldest user/assistant pair; the chat keeps starting with a user turn after the system prompt.
      kept = kept.slice(2);
      chat = [system!, ...kept];
    }
    if (kept.length < rest.length) {
      this.stats.trimmed++;
      this.messages = chat;
    }
    return chat;
  }

  async act(obs: Obs): Promise<Action> {
    if (this.messages.length === 0) this.messages.push({ role: 'system', content: this.getSystemPrompt() });
    this.messages.push({ role: 'user', content: this.formatObservation(obs) });
    this.stats.steps++;
    const chat = this.fitted();
    if (chat === null) {
      this.stats.overlong++;
      this.messages.push({ role: 'assistant', content: '' });
      this.steps.push({ messages: [], sample: null, reward: 0 });
      return this.options.defaultAction;
    }
    const { maxTokens, temperature, topP, seed } = this.options;
    const sample = await this.sampler.sample(chat, { maxTokens, temperature, topP, seed: seed * 1_000_003 + this.draws++ });
    this.messages.push({ role: 'assistant', content: sample.text });
    const action = this.readAction(sample.text);
    const step: PendingStep = { messages: chat, sample, reward: 0 };
    this.steps.push(step);
    if (action !== null) return action;
    this.stats.invalid++;
    step.reward += this.options.invalidPenalty;
    return this.options.defaultAction;
  }

  /** Adds the env's reward to the latest step (call it after env.step, once per step). */
  assignReward(reward: number): void {
    if (!Number.isFinite(reward)) throw new RangeError(`a reward must be a finite number, got ${reward}`);
    const last = this.steps.at(-1);
    if (last === undefined) throw new Error('assignReward before act: a reward belongs to the step that earned it');
    last.reward += reward;
  }

  /**
   * Restarts the sampler's draws at a point fixed by `key` (evaluation: each held-out episode samples with the same
   * seeds before and after training, so their difference is paired, common random numbers); returns the previous
   * position so training's stream can resume.
   */
  seedDraws(key: number): number {
    const was = this.draws;
    this.draws = key;
    return was;
  }

  /**
   * Runs `fn` (episodes with training off) with act() sampling from `backend` instead of the agent's own, and the
   * agent's stats left as they were: the env gate plays the round's candidate and its parent this way.
   */
  async playWith<T>(backend: AgentBackend, fn: () => Promise<T>): Promise<T> {
    if (this.sampler !== this.backend) throw new Error('playWith: the agent is already playing with another backend');
    const stats = structuredClone(this.stats);
    const was = this.training;
    this.sampler = backend;
    this.training = false;
    try {
      return await fn();
    } finally {
      this.sampler = this.backend;
      this.training = was;
      Object.assign(this.stats, stats);
    }
  }

  /** Discounted returns G_t = r_t + γ·G_{t+1} of the episode's rewards. */
  static returns(rewards: readonly number[], gamma: number): number[] {
    const out = new Array<number>(rewards.length);
    let g = 0;
    for (let t = rewards.length - 1; t >= 0; t--) out[t] = g = rewards[t]! + gamma * g;
    return out;
  }

  /** Throws the episode away (the env failed): nothing of it trains. */
  abortEpisode(reason: string): void {
    this.stats.envErrors++;
    if (this.stats.envErrorReasons.length < 5) this.stats.envErrorReasons.push(reason);
    this.messages = [];
    this.steps = [];
  }

  /**
   * Ends the episode. When training, its steps join the batch with their credit, the discounted return G_t; when
   * the batch holds `batchEpisodes` episodes they are stored as rated turns and a round trains, whose stats are
   * returned (else null).
   *
   * With `groupSize` > 1, `group` names the env seed the episode was played from (runEpisode passes it), and the
   * episodes of one seed wait until the group is complete (or the next episode names another seed): then each
   * step's credit is G_t − b, b the mean return (from the start) of the group's other episodes. That baseline
   * depends on the start state and, in an env whose chance follows its seed, on the same draws (blackjack deals the
   * same cards), but never on this episode's own actions, so the policy gradient stays unbiased (Kool, van Hoof &
   * Welling 2019, "Buy 4 REINFORCE samples, get a baseline for free"; GRPO's group baseline without its division by
   * the standard deviation). What is left in the credit is the effect of the episode's choices on the same deal,
   * not the luck of the deal: with one global baseline, a step's credit is mostly the value of the state it was in,
   * and a model that barely reads the state learns the action of the states that win (blackjack: stick on 20) as
   * if it were right everywhere. The round's baseline then meets credits centred on 0. A group of one keeps G_t.
   */
  async terminateEpisode(o: { group?: number } = {}): Promise<RoundStats | null> {
    const steps = this.steps;
    this.messages = [];
    this.steps = [];
    if (steps.length === 0) return null;
    this.stats.episodes++;
    if (!this.training) return null;
    const credit = Agent.returns(steps.map((s) => s.reward), this.options.gamma);
    if (this.options.groupSize === 1) {
      this.batch(steps, credit);
    } else {
      if (this.group.episodes.length > 0 && this.group.key !== o.group) this.closeGroup();
      this.group.key = o.group;
      this.group.episodes.push({ steps, credit });
      if (this.group.episodes.length >= this.options.groupSize) this.closeGroup();
    }
    if (this.episodes.length < this.options.batchEpisodes) return null;
    return this.trainBatch();
  }

  private batch(steps: readonly PendingStep[], credit: readonly number[]): void {
    const recorded = steps.flatMap((s, i): RecordedStep[] => (s.sample === null ? [] : [{ messages: s.messages, sample: s.sample, credit: credit[i]! }]));
    if (recorded.length > 0) this.episodes.push(recorded);
  }

  /** The group's episodes join the batch, each step credited G_t − (mean return of the others). */
  private closeGroup(): void {
    const eps = this.group.episodes;
    this.group = { key: undefined, episodes: [] };
    const total = eps.reduce((s, e) => s + e.credit[0]!, 0);
    for (const e of eps) {
      const b = eps.length === 1 ? 0 : (total - e.credit[0]!) / (eps.length - 1);
      this.batch(
        e.steps,
        e.credit.map((g) => g - b),
      );
    }
  }

  /** Stores the waiting episodes and trains a round now, whatever the batch holds (null when nothing waits). */
  async trainNow(): Promise<RoundStats | null> {
    if (this.group.episodes.length > 0) this.closeGroup();
    return this.trainBatch();
  }

  private async trainBatch(): Promise<RoundStats | null> {
    const batch = this.episodes;
    this.episodes = [];
    if (batch.length === 0) return null;
    for (const e of batch) await this.backend.record(`episode-${this.options.seed}-${this.episodeCount++}`, e);
    const stats = await this.backend.train(this.options.onProgress);
    this.stats.rounds++;
    return stats;
  }
}
