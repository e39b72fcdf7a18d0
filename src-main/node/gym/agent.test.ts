// The Agent's bookkeeping against a scripted backend (the replies are given, the store and rounds are recorded): the
// chat it keeps, the credit per step, unreadable replies, an env that throws, and a chat longer than the token budget.
// The real backend (model server, store, rounds) runs in gym.test.ts.
import { describe, expect, it } from 'vitest';
import { BlackjackEnv, type BlackjackAction, type BlackjackObs } from '../../common/gym/blackjack.ts';
import type { Env, StepResult } from '../../common/gym/env.ts';
import { Agent } from './agent.ts';
import { BlackjackAgent, SmallLmBlackjackAgent, smallLmOpening } from './agents.ts';
import type { AgentBackend, ChatMessage, RecordedStep, RoundStats, Sample, SampleOptions } from './backend.ts';
import { envGateReturns, evaluateAgent, runEpisode, trainAgent } from './runner.ts';
import { envGateDecision } from '../../common/training/gate.ts';

class ScriptedBackend implements AgentBackend {
  tokenBudget = 10_000;
  readonly prompts: ChatMessage[][] = [];
  readonly seeds: number[] = [];
  readonly recorded: { episode: string; steps: RecordedStep[] }[] = [];
  rounds = 0;
  private readonly replies: (i: number, messages: readonly ChatMessage[]) => string;
  constructor(replies: (i: number, messages: readonly ChatMessage[]) => string) {
    this.replies = replies;
  }
  async sample(messages: readonly ChatMessage[], o: SampleOptions): Promise<Sample> {
    this.prompts.push([...messages]);
    this.seeds.push(o.seed);
    const text = this.replies(this.prompts.length - 1, messages);
    return { text, tokens: [1, 2], logprobs: [-0.5, -0.1], modelId: 'm', version: 0, temperature: o.temperature, topP: o.topP };
  }
  /** One token per character: budgets in tests are easy to reason about. */
  promptTokens(messages: readonly ChatMessage[]): number {
    return messages.reduce((s, m) => s + m.content.length, 0);
  }
  async record(episode: string, steps: readonly RecordedStep[]): Promise<void> {
    this.recorded.push({ episode, steps: [...steps] });
  }
  async train(): Promise<RoundStats> {
    this.rounds++;
    return { runId: this.rounds, run: 'succeeded', version: this.rounds, status: 'active', reason: null, accuracy: 1, kl: 0, klBudget: 0.1, trained: 0, steps: 0, seconds: 0 };
  }
}

/** Blackjack with a fixed deal: dealer 10, 7; player 10, 2; then 3 and 10 (hit to 15, hit to bust at 25). */
function fixedBlackjack(): BlackjackEnv {
  const cards = [10, 7, 10, 2, 3, 10];
  let i = 0;
  const env = new BlackjackEnv({}, () => cards[i++ % cards.length]!);
  const reset = env.reset.bind(env);
  env.reset = (seed: number) => {
    i = 0;
    return reset(seed);
  };
  return env;
}

describe('Agent', () => {
  it('keeps the episode\'s chat, credits each step with its discounted return, and trains when the batch is full', async () => {
    const backend = new ScriptedBackend(() => 'hit');
    const agent = new BlackjackAgent(backend, { batchEpisodes: 2, gamma: 0.5 });
    const env = fixedBlackjack();
    const e1 = await runEpisode(agent, env, 1);
    // 12 → hit (15) → hit (25, bust: −1).
    expect(e1).toMatchObject({ return: -1, steps: 2, error: null, round: null });
    expect(backend.prompts[1]!.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(backend.prompts[1]![3]!.content).toBe('Your total is 15. The dealer shows 10.');
    expect(agent.waitingEpisodes).toBe(1);
    const e2 = await runEpisode(agent, env, 2);
    expect(e2.round).toMatchObject({ runId: 1, status: 'active' });
    expect(backend.recorded).toHaveLength(2);
    // G_1 = 0 + 0.5·(−1), G_2 = −1: the hit that busted carries the loss, the first hit half of it.
    expect(backend.recorded[0]!.steps.map((s) => s.credit)).toEqual([-0.5, -1]);
    // Each step is stored with the chat it was sampled from (the newest observation last) and its tokens and μ.
    expect(backend.recorded[0]!.steps[1]!.messages.at(-1)!.content).toBe('Your total is 15. The dealer shows 10.');
    expect(backend.recorded[0]!.steps[0]!.sample.logprobs).toEqual([-0.5, -0.1]);
    expect(agent.stats).toMatchObject({ episodes: 2, steps: 4, invalid: 0, rounds: 1 });
    expect(agent.conversation).toEqual([]);
  });

  it('with groupSize, each seed is played that many times in a row and a step\'s credit is its return less the mean of the group\'s others', async () => {
    // Dealer 10, 7; player 10, 2; then an 8: sticking at 12 loses to 17, hitting to 20 and sticking wins.
    const cards = [10, 7, 10, 2, 8];
    let k = 0;
    const env = new BlackjackEnv({}, () => cards[k++ % cards.length]!);
    const seeds: number[] = [];
    const reset = env.reset.bind(env);
    env.reset = (seed: number) => {
      k = 0;
      seeds.push(seed);
      return reset(seed);
    };
    // Episodes 1 and 3 stick at once; 2 and 4 hit at 12, then stick at 20. The fifth episode (seed 2) waits.
    const replies = ['stick', 'hit', 'stick', 'stick', 'hit', 'stick', 'stick'];
    const backend = new ScriptedBackend((i) => replies[i]!);
    const agent = new BlackjackAgent(backend, { batchEpisodes: 4, groupSize: 2 });
    const rounds = await trainAgent(agent, env, { episodes: 5 });
    expect(seeds).toEqual([0, 0, 1, 1, 2]);
    expect(rounds).toHaveLength(1);
    // The loser's baseline is the winner's +1 (credit −2), the winner's the loser's −1 (credit +2 on both its steps).
    expect(backend.recorded.map((e) => e.steps.map((s) => s.credit))).toEqual([[-2], [2, 2], [-2], [2, 2]]);
    // A group of one (trainNow flushes it) keeps its return.
    await agent.trainNow();
    expect(backend.recorded.at(-1)!.steps.map((s) => s.credit)).toEqual([-1]);
    expect(() => new BlackjackAgent(backend, { groupSize: 0 })).toThrow(/groupSize must be a positive integer/);
  });

  it('discounted returns: G_t = r_t + γ·G_{t+1}', () => {
    expect(Agent.returns([0, 0, 1], 0.9)).toEqual([0.81, 0.9, 1]);
    expect(Agent.returns([1, -1, 2], 1)).toEqual([2, 1, 2]);
    expect(Agent.returns([], 1)).toEqual([]);
  });

  it('an unreadable reply costs the penalty, plays the default action and is counted; a throwing or out-of-list extractAction too', async () => {
    const backend = new ScriptedBackend((i) => ['I would rather not say', 'hit me', 'hmm'][i % 3]!);
    class Throwing extends BlackjackAgent {
      override extractAction(text: string): BlackjackAction | null {
        if (text === 'hmm') throw new Error('a parser bug');
        return super.extractAction(text);
      }
    }
    const agent = new Throwing(backend, { batchEpisodes: 1, invalidPenalty: -0.25 });
    const env = fixedBlackjack();
    const e = await runEpisode(agent, env, 1);
    // Unreadable → stick (the default) at 12 against the dealer's 17: a loss, −1 − 0.25 of credit.
    expect(e).toMatchObject({ return: -1, steps: 1, error: null });
    expect(backend.recorded[0]!.steps.map((s) => s.credit)).toEqual([-1.25]);
    expect(agent.stats.invalid).toBe(1);
    // "hit me" reads as hit; "hmm" makes extractAction throw: unreadable, default action, no crash.
    const e2 = await runEpisode(agent, env, 2);
    expect(e2).toMatchObject({ steps: 2, error: null });
    expect(agent.stats.invalid).toBe(2);
    class OutOfList extends BlackjackAgent {
      override extractAction(): BlackjackAction {
        return 'double' as BlackjackAction;
      }
    }
    const odd = new OutOfList(new ScriptedBackend(() => 'double'), { batchEpisodes: 1 });
    expect(await odd.act(env.reset(3))).toBe('stick');
    expect(odd.stats.invalid).toBe(1);
  });

  it('an env that throws abandons that episode (nothing of it trains), is reported, and the run goes on', async () => {
    const backend = new ScriptedBackend(() => 'stick');
    const agent = new BlackjackAgent(backend, { batchEpisodes: 2 });
    const inner = new BlackjackEnv();
    let calls = 0;
    const flaky: Env<BlackjackObs, BlackjackAction> = {
      name: 'flaky',
      actions: inner.actions,
      reset: (seed) => {
        if (seed === 7) throw new Error('the table is closed');
        return inner.reset(seed);
      },
      step: (a): StepResult<BlackjackObs> => {
        if (++calls === 2) throw new Error('the dealer dropped the deck');
        return inner.step(a);
      },
    };
    const rounds = await trainAgent(agent, flaky, { episodes: 5, seedOf: (i) => [1, 2, 7, 3, 4][i]! });
    expect(agent.stats.envErrors).toBe(2);
    expect(agent.stats.envErrorReasons).toEqual(['flaky step (seed 2): the dealer dropped the deck', 'flaky reset (seed 7): the table is closed']);
    // Seeds 1, 3 and 4 finished: one round of two, one episode waiting; the failed step's sample never trains.
    expect(rounds).toHaveLength(1);
    expect(backend.recorded.flatMap((r) => r.steps)).toHaveLength(2);
    expect(agent.waitingEpisodes).toBe(1);
  });

  it('a chat longer than the token budget drops its oldest exchanges before sampling; one that cannot fit plays the default, untrained', async () => {
    const backend = new ScriptedBackend(() => 'hit');
    const agent = new BlackjackAgent(backend, { batchEpisodes: 1, maxTokens: 10 });
    const sys = agent.getSystemPrompt().length;
    const obs = 'Your total is 12. The dealer shows 10.'.length;
    // Room for the system prompt, one observation, one reply and the next observation, not more.
    backend.tokenBudget = sys + 2 * obs + 'hit'.length + 10;
    const env = new BlackjackEnv({}, (() => {
      const cards = [10, 7, 10, 2, 1, 1, 1, 1, 1, 1, 1];
      let i = 0;
      return () => cards[i++]!;
    })());
    let o = env.reset(0);
    for (let i = 0; i < 4; i++) {
      await agent.act(o);
      agent.assignReward(0);
      o = env.step('hit').obs;
    }
    // Step 3 and 4 each dropped the oldest exchange: the chat never grows past one earlier exchange.
    expect(agent.stats.trimmed).toBe(2);
    expect(backend.prompts.every((p) => backend.promptTokens(p) <= backend.tokenBudget - 10)).toBe(true);
    expect(backend.prompts[3]!.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    await agent.terminateEpisode();
    expect(backend.recorded[0]!.steps).toHaveLength(4);
    // Not even the system prompt and the newest observation fit: the default action, counted, nothing sampled.
    backend.tokenBudget = sys + 5;
    const n = backend.prompts.length;
    expect(await agent.act(env.reset(1))).toBe('stick');
    expect(agent.stats.overlong).toBe(1);
    expect(backend.prompts).toHaveLength(n);
    agent.assignReward(-1);
    expect(await agent.terminateEpisode()).toBeNull();
    expect(backend.recorded).toHaveLength(1);
  });

  it('evaluation plays with training off: nothing is stored and no round runs', async () => {
    const backend = new ScriptedBackend(() => 'stick');
    const agent = new BlackjackAgent(backend, { batchEpisodes: 1 });
    const ev = await evaluateAgent(agent, new BlackjackEnv(), [1, 2, 3, 4]);
    expect(ev).toMatchObject({ episodes: 4, invalid: 0, envErrors: 0 });
    expect(backend.recorded).toEqual([]);
    expect(backend.rounds).toBe(0);
    expect(agent.training).toBe(true);
    // The same held-out episodes sample with the same seeds in a later evaluation (paired before/after), whatever
    // training drew in between.
    const first = backend.seeds.slice();
    await runEpisode(agent, new BlackjackEnv(), 99);
    await evaluateAgent(agent, new BlackjackEnv(), [1, 2, 3, 4]);
    expect(backend.seeds.slice(first.length + 1)).toEqual(first);
    expect(new Set(first).size).toBe(first.length);
  });

  it('playWith plays from another backend (the env gate\'s candidate or parent), stores nothing and leaves the stats as they were', async () => {
    const own = new ScriptedBackend(() => 'stick');
    const other = new ScriptedBackend(() => 'hit');
    const agent = new BlackjackAgent(own, { batchEpisodes: 1 });
    await runEpisode(agent, fixedBlackjack(), 1);
    const stats = structuredClone(agent.stats);
    const ev = await agent.playWith(other, () => evaluateAgent(agent, fixedBlackjack(), [5, 6]));
    // The other backend's "hit" busts both hands (12 → 15 → 25); the agent's own would have stuck.
    expect(ev.returns).toEqual([-1, -1]);
    expect(other.prompts).toHaveLength(4);
    expect(other.recorded).toEqual([]);
    expect(agent.stats).toEqual(stats);
    expect(agent.training).toBe(true);
    const n = own.prompts.length;
    await runEpisode(agent, fixedBlackjack(), 2);
    expect(own.prompts.length).toBe(n + 1);
    await expect(agent.playWith(other, () => agent.playWith(other, async () => 0))).rejects.toThrow(/already playing/);
  });

  it('the env gate compares the returns training optimises: a candidate whose replies cannot be read is rejected though it wins as often', async () => {
    const agent = new BlackjackAgent(new ScriptedBackend(() => 'stick'), { batchEpisodes: 1 });
    const seeds = [5, 6, 7];
    const parent = await agent.playWith(new ScriptedBackend(() => 'stick'), () => evaluateAgent(agent, fixedBlackjack(), seeds));
    // The candidate answers nothing readable on the first two hands: the default action (stick) plays the same hand.
    const candidate = await agent.playWith(new ScriptedBackend((i) => (i < 2 ? '...' : 'stick')), () => evaluateAgent(agent, fixedBlackjack(), seeds));
    expect(candidate.returns).toEqual(parent.returns);
    expect(candidate.shapedReturns).toEqual(parent.returns.map((r, i) => (i < 2 ? r - 1 : r)));
    expect(parent.shapedReturns).toEqual(parent.returns);
    const m = { env: 'blackjack', firstSeed: seeds[0]!, kl: 0, klTokens: 0, ...envGateReturns(candidate, parent) };
    expect(m).toMatchObject({ episodes: 3, candidateWins: m.parentWins, candidateInvalid: 2, parentInvalid: 0, differing: 2 });
    expect(envGateDecision(m).accept).toBe(false);
  });

  it('assignReward before act names the mistake', () => {
    const agent = new BlackjackAgent(new ScriptedBackend(() => 'hit'));
    expect(() => agent.assignReward(1)).toThrow(/assignReward before act/);
  });
});

describe('the blackjack agents read replies', () => {
  it('by keyword, the first named action winning', () => {
    const a = new BlackjackAgent(new ScriptedBackend(() => ''));
    expect(a.extractAction('I will hit.')).toBe('hit');
    expect(a.extractAction('Stand, then hit next time')).toBe('stick');
    expect(a.extractAction('whitespace')).toBeNull();
  });

  it('the small LM by its opening sentence', () => {
    const a = new SmallLmBlackjackAgent(new ScriptedBackend(() => ''));
    expect(smallLmOpening('  Here is how. You')).toBe(1);
    expect(a.extractAction('Sure. You can')).toBe('hit');
    expect(a.extractAction('Here is how.')).toBe('hit');
    expect(a.extractAction('Good idea. You')).toBe('stick');
    expect(a.extractAction('This is simple.')).toBe('stick');
    expect(a.extractAction('Apologies, my last')).toBeNull();
  });
});
