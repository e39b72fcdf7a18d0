// A Rein home the gym trains in: the core (store, scheduler, trainer worker), Rein's own model server with the active
// adapter (serving/embedded.ts), and the tokenizer the server renders chats with. It is the AgentBackend of
// agent.ts: replies are sampled from the model server with logprobs (μ of the sampled distribution, the producing
// version and model id from the reply's headers); a finished episode's steps are stored as captured turns (source
// `gym`, one session per episode, tokens + μ + policy, so the round trains them on-policy with MIS-PO) and rated
// with their credit (ReinCore.rateReward); train() starts a round through the scheduler like `rein train` and waits
// for it. openGymHome makes a fresh home on a model (the small LM by default), as `rein demo` does.
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import type { TrainingProgress } from '../../common/domain.ts';
import { resolveTrainingConfig } from '../../common/training/presets.ts';
import { composeCore } from '../compose.ts';
import { DEFAULT_MODEL_ID, type ReinCore } from '../core/core.ts';
import type { ReinTokenizer } from '../engine/tokenizer.ts';
import { readOrCreateToken, resolveHome } from '../home.ts';
import { startModelServer, type ModelServer } from '../serving/embedded.ts';
import { ADAPTER_VERSION_HEADER, MODEL_ID_HEADER, parseWeights, SAMPLING_HEADER, WEIGHTS_HEADER } from '../serving/upstream.ts';
import { loadModelTokenizer, modelShape, resolveModelDir } from '../model-files/base-model.ts';
import { SMALL_LM_DIR } from '../demo/small-lm.ts';
import type { AgentBackend, ChatMessage, RecordedStep, RoundStats, Sample, SampleOptions } from './backend.ts';
import { k3, type EnvGateMetrics, type GateMetrics } from '../../common/training/gate.ts';
import { gateSeeds } from '../../common/gym/evaluate.ts';
import type { Env } from '../../common/gym/env.ts';
import { Engine, baseEngineOptions } from '../engine/engine.ts';
import type { EnvGateRequest } from '../training/round.ts';
import type { Agent } from './agent.ts';
import { EngineBackend } from './engine-backend.ts';
import { envGateReturns, evaluateAgent } from './runner.ts';

/** Held-out episodes the env gate plays on each side per round, by default. */
export const GATE_EPISODES = 400;

export const GYM_SOURCE = 'gym';

export interface GymSessionOptions {
  core: ReinCore;
  /** llama.cpp threads of the model server (default 1: training shares the machine). */
  threads?: number;
  log?: (line: string) => void;
}

export class GymSession implements AgentBackend {
  readonly tokenBudget: number;
  readonly core: ReinCore;
  readonly server: ModelServer;
  private readonly token: string;
  private readonly tok: ReinTokenizer;
  private readonly nonce = randomUUID().slice(0, 8);
  private turnCount = 0;
  private gate: { play: (req: EnvGateRequest) => Promise<EnvGateMetrics> } | null = null;
  private gateEngine: EngineBackend | null = null;

  private constructor(core: ReinCore, server: ModelServer, token: string, tok: ReinTokenizer, tokenBudget: number) {
    this.core = core;
    this.server = server;
    this.token = token;
    this.tok = tok;
    this.tokenBudget = tokenBudget;
  }

  /** Starts the model server on the core's active model and lets the core store `gym` turns. */
  static async open(o: GymSessionOptions): Promise<GymSession> {
    const { core } = o;
    const s = core.settings();
    if (!s['capture.agents'].includes(GYM_SOURCE)) await core.call('setSettings', { values: { 'capture.agents': [...s['capture.agents'], GYM_SOURCE] } }, 'cli');
    const modelId = s['model.active'] ?? DEFAULT_MODEL_ID;
    const dir = resolveModelDir(core.store, modelId);
    const cfg = resolveTrainingConfig(s['training.preset'], modelShape(dir), s['training.custom']);
    const token = readOrCreateToken(core.home);
    const server = await startModelServer({ core, token, port: 0, threads: o.threads ?? 1, log: o.log ?? (() => {}) });
    return new GymSession(core, server, token, loadModelTokenizer(dir), Math.min(s['serving.contextSize'], cfg.maxTokens));
  }

  /**
   * Gates this session's rounds on the env (common/training/gate.ts, kind `env`): each round's candidate and its
   * parent play `episodes` fresh held-out seeds (gateSeeds: disjoint from training's and the evaluation's) with
   * `agent`, on Rein's engine with the adapters in memory, each episode with the same sampling seeds on both sides;
   * the round accepts the candidate unless the paired change in the return training optimises (the env's rewards
   * plus the penalty of each unreadable reply: runner.ts envGateReturns) is below 0. `episodes: 0` goes
   * back to the rating gate.
   */
  gateOn<Obs, Action>(agent: Agent<Obs, Action>, env: Env<Obs, Action>, o: { episodes?: number } = {}): void {
    const n = o.episodes ?? GATE_EPISODES;
    if (!Number.isInteger(n) || n < 0) throw new RangeError(`gate episodes must be a whole number ≥ 0, got ${n}`);
    if (n === 0) {
      this.gate = null;
      this.core.scheduler.setEnvPlayer(null);
      return;
    }
    const play = async (req: EnvGateRequest): Promise<EnvGateMetrics> => {
      const seeds = gateSeeds(req.runId, n);
      const b = this.gateBackend();
      b.adapter = req.parent;
      b.steps = [];
      const parent = await agent.playWith(b, () => evaluateAgent(agent, env, seeds));
      const parentSteps = b.steps;
      b.adapter = req.candidate;
      b.steps = null;
      const candidate = await agent.playWith(b, () => evaluateAgent(agent, env, seeds));
      // KL(parent ‖ candidate) per token on what the parent sampled: k3 of log π_cand − log π_parent.
      let kl = 0;
      let klTokens = 0;
      for (const s of parentSteps) {
        const seq = [...s.prompt, ...s.tokens];
        const lc = await b.engine.logprobs(seq, { start: s.prompt.length, adapter: req.candidate });
        const lp = await b.engine.logprobs(seq, { start: s.prompt.length, adapter: req.parent });
        for (let i = 0; i < lc.length; i++) kl += k3(lc[i]! - lp[i]!);
        klTokens += lc.length;
      }
      return {
        env: env.name,
        firstSeed: seeds[0]!,
        ...envGateReturns(candidate, parent),
        kl: klTokens === 0 ? 0 : kl / klTokens,
        klTokens,
      };
    };
    this.gate = { play };
    this.core.scheduler.setEnvPlayer(play);
  }

  private gateBackend(): EngineBackend {
    if (this.gateEngine === null) {
      const settings = this.core.settings();
      const modelId = settings['model.active'] ?? DEFAULT_MODEL_ID;
      const engine = Engine.load(resolveModelDir(this.core.store, modelId), baseEngineOptions(settings, 1));
      this.gateEngine = new EngineBackend(engine, this.tokenBudget, modelId);
    }
    return this.gateEngine;
  }

  promptTokens(messages: readonly ChatMessage[]): number {
    return this.tok.encodeChat(messages.map((m) => ({ role: m.role, content: m.content })), { addGenerationPrompt: true }).length;
  }

  async sample(messages: readonly ChatMessage[], o: SampleOptions): Promise<Sample> {
    const res = await fetch(`${this.server.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${this.token}` },
      body: JSON.stringify({ model: 'rein', messages, temperature: o.temperature, top_p: o.topP, max_tokens: o.maxTokens, seed: o.seed, logprobs: true }),
    });
    const body = (await res.json()) as {
      choices?: { message?: { content?: string }; logprobs?: { content?: { id: number; logprob: number }[] } | null }[];
      error?: { message?: string };
    };
    if (!res.ok) throw new Error(`the model server answered ${res.status}: ${body.error?.message ?? ''}`);
    const choice = body.choices?.[0];
    const lp = choice?.logprobs?.content ?? [];
    const sampling = JSON.parse(res.headers.get(SAMPLING_HEADER) ?? '{}') as { temperature?: number; topP?: number };
    return {
      text: choice?.message?.content ?? '',
      tokens: lp.map((e) => e.id),
      logprobs: lp.map((e) => e.logprob),
      modelId: res.headers.get(MODEL_ID_HEADER) ?? '',
      version: Number(res.headers.get(ADAPTER_VERSION_HEADER) ?? 0),
      temperature: sampling.temperature ?? o.temperature,
      topP: sampling.topP ?? o.topP,
      ...((w) => (w === null ? {} : { weights: w }))(parseWeights(res.headers.get(WEIGHTS_HEADER))),
    };
  }

  async record(episode: string, steps: readonly RecordedStep[]): Promise<void> {
    const session = `${GYM_SOURCE}-${this.nonce}-${episode}`;
    for (const [i, s] of steps.entries()) {
      const last = s.messages.at(-1)!;
      const captured = await this.core.call(
        'captureTurn',
        {
          source: GYM_SOURCE,
          session,
          eventId: `${session}-${i}-${this.turnCount++}`,
          prompt: last.content,
          context: s.messages.slice(0, -1),
          response: s.sample.text,
          tokens: s.sample.tokens,
          logprobs: s.sample.logprobs,
          adapterVersion: s.sample.version,
          policy: { modelId: s.sample.modelId, temperature: s.sample.temperature, topP: s.sample.topP, ...(s.sample.weights === undefined ? {} : { weights: s.sample.weights }) },
        },
        'cli',
      );
      // A core that spools captures (spoolCaptures) stores them later, without an id to rate now.
      if (!('turn' in captured) || captured.turn === undefined || captured.turn === null) throw new Error(`the gym needs a core that stores captures at once; step ${i} of ${session} was spooled`);
      this.core.rateReward(captured.turn.id, s.credit, GYM_SOURCE);
    }
  }

  async train(onProgress?: (p: TrainingProgress) => void): Promise<RoundStats> {
    const t0 = performance.now();
    const off = onProgress === undefined ? () => {} : this.core.on('trainingProgress', onProgress);
    try {
      const { runId } = await this.core.call('startTraining', this.gate === null ? {} : { gate: 'env' }, 'cli');
      await this.core.scheduler.idle();
      const run = (await this.core.call('listRuns', {}, 'cli')).find((r) => r.id === runId);
      if (run === undefined) throw new Error(`run ${runId} is missing after training`);
      const v = run.adapterVersion === null ? undefined : (await this.core.call('listAdapters', {}, 'cli')).find((a) => a.version === run.adapterVersion);
      const m = (run.metrics ?? {}) as { gate?: Partial<GateMetrics>; samples?: { pending?: number }; stepCount?: number };
      const env = m.gate?.env;
      return {
        runId,
        run: run.status,
        version: v?.version ?? null,
        status: v?.status ?? run.status,
        reason: v?.reason ?? (run.error === null ? null : String(run.error)),
        accuracy: m.gate?.accuracy ?? null,
        kl: m.gate?.kl ?? null,
        klBudget: m.gate?.klBudget ?? null,
        gate: m.gate?.kind ?? 'ratings',
        envGate: env === undefined ? null : { episodes: env.episodes, candidate: env.candidate, parent: env.parent, change: env.change, candidateWins: env.candidateWins, parentWins: env.parentWins, klTokens: env.klTokens },
        trained: m.samples?.pending ?? 0,
        steps: m.stepCount ?? 0,
        seconds: (performance.now() - t0) / 1000,
      };
    } finally {
      off();
    }
  }

  async close(): Promise<void> {
    this.core.scheduler.setEnvPlayer(null);
    try {
      await this.server.close();
    } finally {
      await this.gateEngine?.engine.close();
    }
  }
}

/**
 * A fresh Rein home in `dir` on `modelDir` (default the small LM), balanced preset, rounds only when the agent asks;
 * `settings` are set beside these (and win), e.g. a custom training preset for an experiment.
 */
export async function openGymHome(dir: string, o: { modelDir?: string; threads?: number; settings?: Record<string, unknown>; log?: (line: string) => void } = {}): Promise<{ core: ReinCore; session: GymSession; close(): Promise<void> }> {
  mkdirSync(dir, { recursive: true });
  const core = composeCore({ home: resolveHome({ REIN_HOME: dir }) });
  try {
    await core.call('setSettings', { values: { 'model.active': o.modelDir ?? SMALL_LM_DIR, 'training.auto': false, 'training.preset': 'balanced', 'proxy.upstream': null, ...o.settings } }, 'cli');
    const session = await GymSession.open({ core, threads: o.threads, log: o.log });
    return {
      core,
      session,
      async close() {
        try {
          await session.close();
        } finally {
          core.close();
        }
      },
    };
  } catch (e) {
    core.close();
    throw e;
  }
}
