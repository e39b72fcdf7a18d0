// Adapter versions, the EMA baseline's history, and the actions that change which version is live.
import type { AdapterView } from '../../src-main/common/domain.ts';
import type { ReinClient } from '../services/api.ts';
import { toApiError } from '../services/api.ts';
import { derive } from './derive.ts';
import type { AdaptersSlice, ReinState, Slice } from './types.ts';

export function createAdaptersSlice(client: ReinClient): Slice<AdaptersSlice> {
  return (set, get) => {
    const act = async (busy: string, fn: () => Promise<unknown>) => {
      set({ adapterBusy: busy, adaptersError: null });
      try {
        await fn();
        await Promise.all([get().loadAdapters(), get().loadStatus(), get().loadEma()]);
      } catch (e) {
        set({ adaptersError: toApiError(e) });
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

/** What a rollback to `version` will change, in words, for the confirmation. */
export function rollbackSummary(target: number, active: AdapterView | null): string {
  const from = active ? `v${active.version}` : 'the base model';
  const to = target === 0 ? 'the base model (no adapter)' : `v${target}`;
  return `${from} stops being used and ${to} becomes active; the baseline goes back to the value it had then. Ratings already trained into ${from} are not queued again.`;
}

const TARGET_NAMES: Record<string, string> = { ollama: 'Ollama', vllm: 'vLLM', llamaServer: 'llama-server', lmStudio: 'LM Studio' };

/** Where a version is published: one line per target, a failure with the server's message and the command that fixes it. */
export function publishLines(a: AdapterView): string[] {
  return Object.entries(a.publish).map(([t, p]) =>
    p.ok ? `${TARGET_NAMES[t] ?? t}: published${p.model ? ` as ${p.model}` : ''}` : `${TARGET_NAMES[t] ?? t}: not served (${p.message})`);
}

/** The active version and what serves it; never "live" on a model server when no publish to one succeeded. */
export function servedSummary(active: AdapterView | null): string {
  if (active === null) return 'Active: base model';
  const ok = Object.entries(active.publish).filter(([, p]) => p.ok).map(([t]) => TARGET_NAMES[t] ?? t);
  return `Active in Rein: v${active.version} · ${ok.length === 0 ? 'no model server serves it yet' : `served by ${ok.join(', ')}`}`;
}
