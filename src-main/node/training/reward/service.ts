// The reward model's verbs (common/api.ts rewardStatus, trainRewardModel, rewardAsk) over the store. Scoring a turn
// needs the base's forward pass: one Engine is loaded on first use, kept for the model directory it was loaded from
// and closed with the core. The engine (onnxruntime-node) is imported only then, so a CLI call or a core that never
// scores does not load it.
import type { VerbOutputs } from '../../../common/api.ts';
import type { Settings } from '../../../common/config.ts';
import type { ContextMessage } from '../../../common/domain.ts';
import { askDecision, rewardModelLine } from '../../../common/training/reward.ts';
import type { Engine } from '../../engine/engine.ts';
import type { Store } from '../../store/store.ts';
import { turnMessages } from '../../../common/sources.ts';
import { resolveModelDir } from '../../model-files/base-model.ts';


export interface RewardDeps {
  store: Store;
  settings: () => Settings;
  modelId: () => string;
}

export interface RewardService {
  rewardStatus(): VerbOutputs['rewardStatus'];
  trainRewardModel(): Promise<VerbOutputs['trainRewardModel']>;
  rewardAsk(turnId: number): Promise<VerbOutputs['rewardAsk']>;
  close(): Promise<void>;
}

export function createRewardService(d: RewardDeps): RewardService {
  // Kept for the directory and the settings it was loaded with (baseEngineOptions).
  let loaded: { key: string; engine: Engine } | null = null;
  // One caller at a time loads the engine; the others wait for it.
  let loading: Promise<Engine> | null = null;

  async function engineFor(dir: string): Promise<Engine> {
    const s = d.settings();
    const opts = { 'training.matchLlamaCpp': s['training.matchLlamaCpp'], 'training.keepQuantized': s['training.keepQuantized'] };
    const key = JSON.stringify([dir, opts]);
    if (loaded?.key === key) return loaded.engine;
    if (loading !== null) return loading;
    loading = (async () => {
      const old = loaded;
      loaded = null;
      if (old !== null) await old.engine.close();
      // One ORT thread: scoring a turn is a single forward pass, and the trainer worker may be using the cores.
      const { Engine, baseEngineOptions } = await import('../../engine/engine.ts');
      const engine = Engine.load(dir, baseEngineOptions(opts, 1));
      loaded = { key, engine };
      return engine;
    })().finally(() => {
      loading = null;
    });
    return loading;
  }

  return {
    rewardStatus() {
      const s = d.settings();
      const modelId = d.modelId();
      const latest = d.store.rewardModels.latest(modelId);
      const history = d.store.rewardModels.list(modelId, 21);
      const { head: _head, ...view } = latest ?? { head: null };
      return {
        latest: latest === null ? null : (view as VerbOutputs['rewardStatus']['latest']),
        line: latest === null ? null : rewardModelLine(latest),
        history: history.slice(1),
        ask: s['reward.ask'],
        unsureMargin: s['reward.unsureMargin'],
        notAsked: latest === null ? 0 : d.store.rewardModels.notAsked(latest.id),
      };
    },

    async trainRewardModel() {
      const modelId = d.modelId();
      const dir = resolveModelDir(d.store, modelId, 'trainRewardModel');
      const { trainRewardModel } = await import('./train.ts');
      const m = await trainRewardModel({ store: d.store, modelId, modelDir: dir, engine: await engineFor(dir) });
      if (m === null) return { model: null, reason: 'the ratings hold no example of both a preferred and a not-preferred answer yet' };
      const { head: _head, ...model } = m;
      return { model, reason: null };
    },

    async rewardAsk(turnId) {
      const s = d.settings();
      const modelId = d.modelId();
      const turn = d.store.getTurn(turnId); // throws not_found for an unknown turn
      const latest = d.store.rewardModels.latest(modelId);
      if (s['reward.ask'] === 'always' || latest === null) {
        return { turnId, ...askDecision(s['reward.ask'], null, s['reward.unsureMargin']), rewardModelVersion: latest?.version ?? null };
      }
      let p: number | null = d.store.rewardModels.prediction(turnId, latest.id)?.p ?? null;
      if (p === null) {
        try {
          const dir = resolveModelDir(d.store, modelId, 'rewardAsk');
          // A head only scores features of the weights it was fitted on.
          if (dir === latest.baseModel) {
            const messages = turnMessages({ source: turn.source, context: turn.context as ContextMessage[], prompt: turn.prompt });
            const { scoreAnswer } = await import('./train.ts');
            p = await scoreAnswer(await engineFor(dir), latest, messages, turn.response);
          }
        } catch {
          p = null; // the model cannot be loaded or the text cannot be encoded: ask (askDecision says why)
        }
      }
      const decision = askDecision('unsure', p, s['reward.unsureMargin']);
      if (p === null) decision.reason = `reward model v${latest.version} could not score this answer`;
      if (p !== null) d.store.rewardModels.recordPrediction(turnId, latest.id, p, decision.ask);
      return { turnId, ...decision, rewardModelVersion: latest.version };
    },

    async close() {
      const l = loaded;
      loaded = null;
      if (l !== null) await l.engine.close();
    },
  };
}
