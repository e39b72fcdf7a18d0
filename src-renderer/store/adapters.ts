// Adapter versions, the EMA baseline's history, and the actions that change which version is live.
import type { AdapterView } from '../../src-main/common/domain.ts';
import type { ReinClient } from '../services/api.ts';
import { toApiError } from '../services/api.ts';
import { derive } from './derive.ts';
import type { AdaptersSlice, ReinState, Slice } from './types.ts';

export function createAdaptersSlice(client: ReinClient): Slice<AdaptersSlice> {
  return (set, get) => {
    // An action's failure is kept apart from the list's load error, named by the action ("retrain:2"), so the
    // screen shows it beside the button that failed and a later reload does not wipe it.
    const act = async (busy: string, fn: () => Promise<unknown>) => {
      set({ adapterBusy: busy, adapterActionError: null });
      try {
        await fn();
        await Promise.all([get().loadAdapters(), get().loadStatus(), get().loadEma()]);
      } catch (e) {
        set({ adapterActionError: { action: busy, error: toApiError(e) } });
      } finally {
        set({ adapterBusy: null });
      }
    };
    return {
      adapters: [],
      adaptersLoaded: false,
      adaptersError: null,
      adapterBusy: null,
      ema: [],
      lastReset: null,
      adapterActionError: null,
      resetPlan: null,
      loadRoundPresets: async () => {
        try {
          // The size-based round time for the ratings waiting now (the confirmation's count).
          set({ presets: await client.describePresets({ pending: get().status?.pending ?? 0 }) });
        } catch {
          // No trainable model yet: the confirmation then has no size to estimate from, and says so.
        }
      },
      loadResetPlan: async () => {
        set({ resetPlan: null });
        try {
          set({ resetPlan: await client.planReset({}) });
        } catch (e) {
          set({ adapterActionError: { action: 'reset', error: toApiError(e) } });
        }
      },
      loadAdapters: async () => {
        try {
          set({ adapters: await client.listAdapters({}), adaptersLoaded: true, adaptersError: null });
        } catch (e) {
          set({ adaptersError: toApiError(e), adaptersLoaded: true });
        }
      },
      loadEma: async () => {
        try {
          set({ ema: await client.emaHistory({ limit: 2000 }) });
        } catch (e) {
          set({ adaptersError: toApiError(e) });
        }
      },
      rollback: (version) => act(`rollback:${version}`, () => client.rollback({ version })),
      reset: () =>
        act('reset', async () => {
          set({ lastReset: await client.reset({ confirm: true }) });
        }),
      retrain: (fromVersion) =>
        act(`retrain:${fromVersion}`, async () => {
          await client.startTraining({ fromVersion });
          await get().loadRuns();
        }),
    };
  };
}

export const selectAdapters = (s: ReinState) => s.adapters;
export const selectActiveAdapter = derive([selectAdapters], (list): AdapterView | null => list.find((a) => a.status === 'active') ?? null);

/**
 * A move between versions in words, for its button and confirmation: going to an older version than the active one
 * is a roll back; going to a newer one (the base → v1, or back to v3 after rolling back to v1) is not.
 */
export function versionMove(target: number, active: AdapterView | null): { title: string; label: string; summary: string } {
  const current = active?.version ?? 0;
  const to = target === 0 ? 'the base model' : `v${target}`;
  const from = current === 0 ? 'the base model (no adapter)' : `v${current}`;
  const title = target === 0 ? 'Use the base model?' : target < current ? `Roll back to v${target}?` : `Switch to v${target}?`;
  const label = target === 0 ? 'Use the base model' : target < current ? `Roll back to v${target}` : `Use v${target}`;
  const summary =
    `Rein will answer with ${to}${target === 0 ? ' (no adapter)' : ''} instead of ${from}, and the reward baseline goes back to the value saved with ${to}.` +
    (current === 0 ? '' : ` Ratings already trained into v${current} stay trained; they are not queued again.`);
  return { title, label, summary };
}

const TARGET_NAMES: Record<string, string> = { ollama: 'Ollama', vllm: 'vLLM', llamaServer: 'llama-server', lmStudio: 'LM Studio' };

/** Where a version is published: one line per target, a failure with the server's message and the command that fixes it. */
export function publishLines(a: AdapterView): string[] {
  return Object.entries(a.publish).map(([t, p]) =>
    p.ok ? `${TARGET_NAMES[t] ?? t}: published${p.model ? ` as ${p.model}` : ''}` : `${TARGET_NAMES[t] ?? t}: not served (${p.message})`);
}

/** The active version (Rein's own model server answers with it) and which other model servers it was published to; never "served" by one whose publish failed. */
export function servedSummary(active: AdapterView | null): string {
  if (active === null) return 'Active: base model';
  const ok = Object.entries(active.publish).filter(([, p]) => p.ok).map(([t]) => TARGET_NAMES[t] ?? t);
  return `Active in Rein: v${active.version} · ${ok.length === 0 ? 'not published to another model server yet' : `also served by ${ok.join(', ')}`}`;
}
