// The slices added for the popup, ratings history, adapters and training dashboard, and their selectors, against a
// recording client that answers per verb (the real core behind them is covered by the e2e suite in Chromium).
import { describe, expect, it, vi } from 'vitest';
import type { ReinApi, Subscribe } from '../../src-main/common/api.ts';
import type { Settings } from '../../src-main/common/config.ts';
import type { AdapterView, RatingView, TurnSummary } from '../../src-main/common/domain.ts';
import { ApiError, type ReinClient } from '../services/api.ts';
import { publishLines, selectActiveAdapter, servedSummary, versionMove } from './adapters.ts';
import { createReinStore } from './index.ts';
import { raisesPopup, selectAskReason, selectPopupTurn, selectQueueLength } from './popup.ts';
import { DEFAULT_FILTERS, perDay, RATINGS_PAGE, ratingsQuery, selectRatingRows } from './ratings.ts';
import { deviceSentence, gateSentence, policySentence, rejectionWords, runMetrics, selectLiveProgress, selectRewardWords, stoppedSentence, weakSentence } from './training.ts';

// The popup's settings at their defaults (common/config.ts); the renderer may import only types from common.
const defaultSettings = (): Settings =>
  ({ 'popup.enabled': true, 'popup.timeoutSeconds': 45, 'capture.paused': false, 'popup.agents': ['claude-code', 'codex', 'openclaw', 'proxy', 'api'] }) as Settings;

const turn = (id: number, over: Partial<TurnSummary> = {}): TurnSummary => ({
  id,
  source: 'claude-code',
  session: 's',
  eventId: `e${id}`,
  createdAt: id,
  model: null,
  promptPreview: 'p',
  responsePreview: 'r',
  state: 'unrated',
  rating: null,
  onPolicy: false,
  ...over,
});
const rating = (id: number, over: Partial<RatingView> = {}): RatingView => ({
  id,
  turnId: id,
  kind: 'good',
  value: 1,
  scale: null,
  correction: null,
  tags: [],
  comment: null,
  rater: 'me',
  modelId: 'default',
  createdAt: Date.now(),
  undone: false,
  runId: null,
  lastRound: null,
  parked: null,
  ...over,
});

function recordingClient(answers: Partial<Record<keyof ReinApi, (input: never) => unknown>>) {
  const calls: [string, unknown][] = [];
  const on: Subscribe = () => () => {};
  const client = new Proxy({ on } as ReinClient, {
    get: (t, key: string) => {
      if (key === 'on') return t.on;
      if (key === 'onConnection') return undefined;
      return async (input: unknown) => {
        calls.push([key, input]);
        const f = answers[key as keyof ReinApi];
        if (!f) throw new Error(`unexpected verb ${key}`);
        return f(input as never);
      };
    },
  });
  return { client, calls };
}

describe('reward model words', () => {
  it('shows the core\'s line and how the popup asks; no model yet says when one trains', async () => {
    const status = (over: object) => ({ latest: null, line: null, history: [], ask: 'always', unsureMargin: 0.4, notAsked: 0, ...over });
    let answer = status({});
    const store = createReinStore(recordingClient({ rewardStatus: () => answer }).client);
    await store.getState().loadReward();
    expect(selectRewardWords(store.getState())).toEqual({
      model: 'No reward model yet: it trains after a round, once your ratings hold a Good and a Bad answer.',
      ask: 'The popup asks about every answer (Settings: reward.ask).',
      scores: null,
    });
    answer = status({ line: 'reward model v2 (40 examples): held-out AUROC 0.90 [0.70, 1.00] on 4+6; no held-out pairs yet', ask: 'unsure', notAsked: 7 });
    await store.getState().loadReward();
    expect(selectRewardWords(store.getState())).toEqual({
      model: 'reward model v2 (40 examples): held-out AUROC 0.90 [0.70, 1.00] on 4+6; no held-out pairs yet',
      ask: 'The popup asks only when the reward model is unsure (its chance of Good between 10% and 90%); 7 answers were not asked about and stay unrated.',
      scores: null,
    });
    answer = status({ line: 'x', ask: 'unsure', notAsked: 1 });
    await store.getState().loadReward();
    expect(selectRewardWords(store.getState())?.ask).toMatch(/; 1 answer was not asked about/);
  });
});

describe('popup slice', () => {
  it('queues unrated turns oldest first, skips what the settings exclude, and drops rated or ignored ones', () => {
    const store = createReinStore(recordingClient({}).client);
    const s = () => store.getState();
    s().applySettings({});
    store.setState({ settings: { ...defaultSettings(), 'popup.agents': ['claude-code'] } });
    s().enqueue(turn(1));
    s().enqueue(turn(2, { source: 'codex' }));
    s().enqueue(turn(3));
    s().enqueue(turn(3));
    expect(s().queue.map((t) => t.id)).toEqual([1, 3]);
    expect(selectPopupTurn(s())?.id).toBe(1);
    s().settle(turn(1, { state: 'rated' }));
    expect(selectPopupTurn(s())?.id).toBe(3);
    expect(selectQueueLength(s())).toBe(1);
    store.setState({ settings: { ...defaultSettings(), 'capture.paused': true } });
    expect(raisesPopup(turn(9), s().settings)).toBe(false);
    store.setState({ settings: defaultSettings() });
    // Every waiting turn stays queued: none is dropped for being the 21st.
    for (let i = 10; i < 60; i++) s().enqueue(turn(i));
    expect(s().queue.length).toBe(51);
    expect(s().queue.at(-1)?.id).toBe(59);
  });

  it('with reward.ask unsure, queues only the turns rewardAsk says to ask about, with the reason it shows', async () => {
    const { client, calls } = recordingClient({
      rewardAsk: (input: { turnId: number }) =>
        input.turnId === 1
          ? { turnId: 1, ask: true, reason: 'the reward model is unsure: 0.52', p: 0.52, rewardModelVersion: 2 }
          : { turnId: 2, ask: false, reason: 'the reward model is confident (0.97); not asked, and not labelled', p: 0.97, rewardModelVersion: 2 },
    });
    const store = createReinStore(client);
    const s = () => store.getState();
    store.setState({ settings: { ...defaultSettings(), 'reward.ask': 'unsure' } });
    s().enqueue(turn(1));
    s().enqueue(turn(2));
    await new Promise((r) => setTimeout(r, 0));
    expect(calls).toEqual([['rewardAsk', { turnId: 1 }], ['rewardAsk', { turnId: 2 }]]);
    expect(s().queue.map((t) => t.id)).toEqual([1]);
    expect(selectAskReason(s())).toBe('the reward model is unsure: 0.52');
    // The default (always) asks about every turn without asking the reward model.
    store.setState({ settings: defaultSettings(), queue: [] });
    s().enqueue(turn(3));
    expect(s().queue.map((t) => t.id)).toEqual([3]);
    expect(calls).toHaveLength(2);
    expect(selectAskReason(s())).toBeNull();
  });

  it('dismiss counts the turn as ignored; a rating with a correction and tags goes to rate and leaves the queue', async () => {
    const r = rating(4, { correction: 'better' });
    const { client, calls } = recordingClient({
      ignoreTurn: () => ({ turn: turn(5, { state: 'ignored' }) }),
      rate: () => ({ rating: r, status: null }),
    });
    const store = createReinStore(client);
    const s = () => store.getState();
    s().enqueue(turn(4));
    s().enqueue(turn(5));
    await s().dismiss(5);
    expect(calls).toContainEqual(['ignoreTurn', { turnId: 5 }]);
    s().setDraft(4, { correction: 'better', tags: 'style' });
    await s().rate(4, 4, 'popup');
    expect(calls).toContainEqual(['rate', { turnId: 4, value: 4, correction: 'better', tags: ['style'] }]);
    expect(s().queue).toEqual([]);
    expect(s().rateError).toBeNull();
  });
});

describe('ratings history', () => {
  it('turns filters into a listRatings query', () => {
    expect(ratingsQuery(DEFAULT_FILTERS, 0)).toEqual({ limit: RATINGS_PAGE, offset: 0 });
    expect(ratingsQuery({ search: ' parser ', kind: 'bad', source: 'codex', trained: 'no', days: 7, tag: 'style' }, 2, 1_000_000_000)).toEqual({
      limit: RATINGS_PAGE,
      offset: 2 * RATINGS_PAGE,
      search: 'parser',
      kind: 'bad',
      source: 'codex',
      trained: false,
      since: 1_000_000_000 - 7 * 86_400_000,
      tag: 'style',
    });
  });

  it('loads a page with each rated turn fetched once, and a re-rate reloads the page', async () => {
    const items = [rating(1), rating(2, { turnId: 1, kind: 'bad', value: -1 })];
    const { client, calls } = recordingClient({
      listRatings: () => ({ items, total: 2 }),
      getTurn: (i: { turnId: number }) => ({ ...turn(i.turnId), prompt: 'full prompt', response: 'full', context: [], tokens: null, logprobs: null, adapterVersion: null, truncated: false }),
      rate: () => ({ rating: rating(3), status: { ratings: {} } }),
    });
    const store = createReinStore(client);
    await store.getState().loadRatings();
    expect(calls.filter(([v]) => v === 'getTurn')).toEqual([['getTurn', { turnId: 1 }]]);
    expect(selectRatingRows(store.getState()).map((r) => r.turn?.prompt)).toEqual(['full prompt', 'full prompt']);
    await store.getState().rerate(1, 'good');
    expect(calls.filter(([v]) => v === 'listRatings').length).toBe(2);
  });

  it('shows the answer of the newest load: an unfiltered page answered after the filtered one does not replace it', async () => {
    const answers: ((page: { items: RatingView[]; total: number }) => void)[] = [];
    const { client } = recordingClient({
      listRatings: () => new Promise((resolve) => answers.push(resolve)),
      getTurn: (i: { turnId: number }) => ({ ...turn(i.turnId), prompt: 'p', response: 'r', context: [], tokens: null, logprobs: null, adapterVersion: null, truncated: false }),
    });
    const store = createReinStore(client);
    const all = store.getState().loadRatings();
    store.getState().setRatingFilters({ tag: 'wrong' });
    await vi.waitFor(() => expect(answers).toHaveLength(2));
    answers[1]!({ items: [rating(2)], total: 1 });
    await vi.waitFor(() => expect(store.getState().ratingTotal).toBe(1));
    answers[0]!({ items: [rating(1), rating(2), rating(3)], total: 3 });
    await all;
    expect(store.getState().ratingTotal).toBe(1);
    expect(store.getState().ratingItems.map((r) => r.id)).toEqual([2]);
  });

  it('counts ratings per local day by the sign of the reward, with empty days as zero', () => {
    const now = new Date(2026, 10, 20, 12).getTime();
    const days = perDay([rating(1, { createdAt: now }), rating(2, { createdAt: now, kind: 'scale', value: -0.5 }), rating(3, { createdAt: now - 86_400_000, kind: 'scale', value: 0 })], now);
    expect(days.length).toBe(14);
    expect(days.at(-1)).toEqual({ day: '11-20', good: 1, bad: 1 });
    expect(days.at(-2)).toEqual({ day: '11-19', good: 0, bad: 0 });
  });
});

describe('training and adapters', () => {
  it('says how many unconfirmed weak labels a round trained and at what weight, and nothing when none did', () => {
    const weak = { labels: 3, drawn: 2, meanWeight: 0.4375, turns: [] };
    expect(weakSentence(runMetrics({ metrics: { weak } }).weak)).toBe('2 unconfirmed weak labels trained, at weight 0.44 on average (a rating weighs 1)');
    expect(weakSentence({ labels: 1, drawn: 1, meanWeight: 0.45 })).toBe('1 unconfirmed weak label trained, at weight 0.45 on average (a rating weighs 1)');
    expect(stoppedSentence(runMetrics({ metrics: { stoppedEarly: { step: 27, of: 32, klToParent: 0.1000043, limit: 0.0966 } } }).stoppedEarly)).toBe(
      'Stopped after step 27 of 32: the model had moved as far from the previous version as one round may (KL 0.100 a token; the stop is at 0.097, half the budget).',
    );
    expect(stoppedSentence(runMetrics({ metrics: { stoppedEarly: null } }).stoppedEarly)).toBeNull();
    expect(weakSentence({ labels: 0, drawn: 0, meanWeight: null })).toBeNull();
    // A run recorded before weak labels trained.
    expect(weakSentence(runMetrics({ metrics: {} }).weak)).toBeNull();
  });

  it('says how many sequences trained on-policy and as text, and why ratings trained as text, each reason once with its count', () => {
    const ids = 'the model server\'s prompt ids (the agent\'s system prompt, tools and history) are not stored with the turn';
    const long = 'its exact context (284 tokens) and reply (12) are longer than the training sequence limit of 200 tokens (training maxTokens)';
    const samples = { pending: 4, replay: 0, heldout: 1, mispo: 1, kto: 3, offPolicy: [{ ratingId: 3, why: long }, { ratingId: 4, why: ids }, { ratingId: 5, why: ids }] };
    expect(policySentence(runMetrics({ metrics: { samples } }).samples)).toEqual({
      sentence: '1 trained on-policy (MIS-PO), 3 as text (KTO)',
      reasons: [
        { why: ids, count: 2 },
        { why: long, count: 1 },
      ],
    });
    // A run recorded before the counts were kept says nothing rather than "0 on-policy".
    expect(policySentence({ pending: 4, replay: 0, heldout: 1 })).toBeNull();
  });

  it('says where a round trained, and why auto stayed on the CPU', () => {
    const metrics = { device: { requested: 'auto', provider: 'cpu', adapter: 'AMD EPYC', reason: "no GPU provider passed its probe (webgpu: Failed to get a WebGPU adapter: No supported adapters)" } };
    expect(deviceSentence(runMetrics({ metrics }).device)).toBe('Trained on the CPU (AMD EPYC): no GPU could be used.');
    expect(deviceSentence({ requested: 'webgpu', provider: 'webgpu', adapter: 'WebGPU (Dawn), the system\'s default adapter', reason: null })).toBe("Trained on webgpu (WebGPU (Dawn), the system's default adapter).");
    // A run recorded before the device was: nothing to say.
    expect(deviceSentence(runMetrics({ metrics: {} }).device)).toBeNull();
  });

  it('says the gate verdict in words with the numbers behind it: intervals, KL per token to the parent and from the base', () => {
    const gate = { heldout: 12, accuracy: 0.81, accuracyCi: [0.52, 0.95] as [number, number], previousAccuracy: 0.78, pairedCi: [-0.2, 0.31] as [number, number], kl: 0.004, klBase: 0.012, klTokens: 40, klBudget: 0.193 };
    expect(gateSentence(gate, true)).toBe(
      'activated: preference accuracy 0.81 [0.52, 0.95] on 12 held-out turns, parent 0.78 (paired difference [-0.20, 0.31]); KL to the parent 0.004/token ≤ 0.193, 0.012 from the base',
    );
    // A candidate measurably worse than its parent fails, whatever its accuracy.
    expect(gateSentence({ ...gate, pairedCi: [-0.4, -0.1] }, null)).toMatch(/^fails: /);
    expect(gateSentence({ ...gate, previousAccuracy: null, pairedCi: null, accuracy: 0.4, accuracyCi: [0.15, 0.69] }, null)).toBe(
      'fails: preference accuracy 0.40 [0.15, 0.69] on 12 held-out turns; KL to the parent 0.004/token ≤ 0.193, 0.012 from the base',
    );
    expect(gateSentence({ ...gate, kl: 0.3 }, null)).toMatch(/^fails: .*KL to the parent 0.3\/token > 0.193/);
    expect(gateSentence({ ...gate, accuracy: null }, null)).toBeNull();
    // The env gate of the gym's rounds: the paired return on held-out episodes.
    const env = { env: 'blackjack', episodes: 400, candidate: -0.21, parent: -0.25, change: { mean: 0.04, ci: [-0.01, 0.09] as [number, number] } };
    expect(gateSentence({ ...gate, kind: 'env', accuracy: null, kl: 0.05, env }, true)).toBe(
      "activated: mean return -0.210 against the parent's -0.250 on 400 held-out blackjack episodes, paired change +0.040 [-0.010, +0.090]; KL to the parent 0.05/token",
    );
    expect(gateSentence({ ...gate, kind: 'env', accuracy: null, env: { ...env, change: { mean: -0.01, ci: [-0.05, 0.03] } } }, null)).toMatch(/^fails: /);
  });

  it('says an older run\'s verdict as it was decided (chance and a retention tolerance)', () => {
    const gate = { scope: 'heldout' as const, heldout: 12, accuracy: 0.81, previousAccuracy: 0.78, kl: 0.004, klBudget: 0.01 };
    expect(gateSentence(gate, true)).toBe(
      "activated: preference accuracy 0.81 > 0.50 (chance), within 0.05 of the active version's 0.78; KL 0.004 ≤ 0.01 (12 older rated turns)",
    );
    expect(gateSentence({ ...gate, scope: 'trained', previousAccuracy: null, accuracy: 0.4 }, false)).toBe(
      'rejected: preference accuracy 0.40 ≤ 0.50 (chance); KL 0.004 ≤ 0.01 (the 12 turns it trained on)',
    );
  });

  it('keeps a live curve per run from progress events, and clears the live view when the round ends', () => {
    const { client } = recordingClient({ listRuns: () => [] });
    const store = createReinStore(client);
    const p = (runId: number, step: number, phase: 'training' | 'done' = 'training') => ({ runId, phase, step, steps: 4, loss: 1 / (step + 1), kl: 0.01 * step, clipFraction: 0, tokensPerSecond: 100, etaSeconds: 1 });
    store.getState().setProgress(p(1, 1));
    store.getState().setProgress(p(1, 2));
    expect(store.getState().liveCurve.map((x) => x.step)).toEqual([1, 2]);
    store.getState().setProgress(p(2, 1));
    expect(store.getState().liveCurve.map((x) => x.step)).toEqual([1]);
    expect(selectLiveProgress(store.getState())?.runId).toBe(2);
    store.getState().setProgress(p(2, 4, 'done'));
    expect(selectLiveProgress(store.getState())).toBeNull();
  });

  it('rollback reloads adapters and status; the confirmation says what changes', async () => {
    const v = (version: number, status: AdapterView['status']): AdapterView => ({ id: version, modelId: 'm', version, status, path: `/h/v${version}`, runId: version, parentVersion: null, createdAt: 1, emaValue: 0, metrics: null, reason: null, publish: {} });
    let list = [v(2, 'active'), v(1, 'inactive')];
    const { client, calls } = recordingClient({
      rollback: () => {
        list = [v(2, 'rolled_back'), v(1, 'active')];
        return {};
      },
      listAdapters: () => list,
      status: () => ({ activeAdapter: { version: 1 } }),
      emaHistory: () => [],
    });
    const store = createReinStore(client);
    await store.getState().loadAdapters();
    const back = versionMove(1, selectActiveAdapter(store.getState()));
    expect(back.label).toBe('Roll back to v1');
    expect(back.summary).toBe('Rein will answer with v1 instead of v2, and the reward baseline goes back to the value saved with v1. Ratings already trained into v2 stay trained; they are not queued again.');
    // Moving forward is not a roll back: from the base model to v1, or from v1 back to v2.
    const forward = versionMove(1, null);
    expect([forward.title, forward.label]).toEqual(['Switch to v1?', 'Use v1']);
    expect(forward.summary).toBe('Rein will answer with v1 instead of the base model (no adapter), and the reward baseline goes back to the value saved with v1.');
    expect(versionMove(2, v(1, 'active')).label).toBe('Use v2');
    expect(versionMove(0, v(2, 'active'))).toMatchObject({ title: 'Use the base model?', label: 'Use the base model' });
    await store.getState().rollback(1);
    expect(calls[1]).toEqual(['rollback', { version: 1 }]);
    expect(selectActiveAdapter(store.getState())?.version).toBe(1);
    expect(store.getState().adapterBusy).toBeNull();
  });

  it('says where the active version is served, never that it is live when no model server serves it', () => {
    const at = 1;
    const a = (publish: AdapterView['publish']): AdapterView => ({ id: 3, modelId: 'm', version: 3, status: 'active', path: '/h/v3', runId: 3, parentVersion: null, createdAt: 1, emaValue: 0, metrics: null, reason: null, publish });
    const failed = { ok: false, message: 'llamaServer: GET http://127.0.0.1:8080/lora-adapters failed: connect ECONNREFUSED; start the server, then run: rein publish --target llamaServer', at };
    expect(servedSummary(null)).toBe('Active: base model');
    expect(servedSummary(a({}))).toBe('Active in Rein: v3 · not published to another model server yet');
    expect(servedSummary(a({ llamaServer: failed }))).toBe('Active in Rein: v3 · not published to another model server yet');
    expect(publishLines(a({ llamaServer: failed }))).toEqual([`llama-server: not served (${failed.message})`]);
    const both = a({ llamaServer: failed, vllm: { ok: true, message: 'loaded', at, model: 'rein-v3' } });
    expect(servedSummary(both)).toBe('Active in Rein: v3 · also served by vLLM');
    expect(publishLines(both)).toEqual([`llama-server: not served (${failed.message})`, 'vLLM: published as rein-v3']);
  });
});

describe('a rejected round in words', () => {
  const gate = { heldout: 12, accuracy: 0.6, previousAccuracy: 0.55, accuracyCi: [0.3, 0.8] as [number, number], pairedCi: null, kl: 3.2, klBudget: 0.05368037146652016 };
  it('says why in a plain sentence and what to do next, only for a rejected round', () => {
    expect(rejectionWords(gate, false)?.why).toBe('The new version changed too much on answers it had not trained on, so it was not used.');
    expect(rejectionWords(gate, false)?.next).toMatch(/Careful preset/);
    expect(rejectionWords({ ...gate, kl: 0.01, accuracy: 0.4 }, false)?.why).toMatch(/did not agree with your held-out ratings better/);
    expect(rejectionWords(gate, true)).toBeNull();
    expect(rejectionWords(gate, null)).toBeNull();
  });
  it('prints the KL budget rounded, not as 0.05368037146652016', () => {
    expect(gateSentence(gate, false)).toContain('> 0.054');
  });
});

describe('wizard model step', () => {
  it('a folder error does not outlive choosing a model', async () => {
    const store = createReinStore(
      recordingClient({
        discoverModels: () => {
          throw new ApiError({ code: 'bad_input', message: 'discoverModels: no folder at /nope' });
        },
        useDemoModel: () => ({ model: {}, settings: {} }),
        status: () => null,
        describePresets: () => null,
      }).client,
    );
    await store.getState().addModelFolder('/nope');
    expect(store.getState().folderNote).toEqual({ error: true, text: 'no folder at /nope' });
    await store.getState().chooseModel('demo');
    expect(store.getState().folderNote).toBeNull();
  });
});

describe('the reward model on a turn', () => {
  it('shows its chance of Good, asked about or not', async () => {
    const { predictionWords } = await import('./ratings.ts');
    expect(predictionWords({ p: 0.834, asked: false, version: 2 })).toBe('Reward model v2: 83% chance of Good (not asked: it was sure)');
    expect(predictionWords({ p: 0.5, asked: true, version: 1 })).toBe('Reward model v1: 50% chance of Good (the popup asked: it was unsure)');
    expect(predictionWords(null)).toBeNull();
    expect(predictionWords(undefined)).toBeNull();
  });
});
