import type { ReinClient } from '../services/api.ts';
import { toApiError } from '../services/api.ts';
import type { ReinState, SettingsSlice, Slice } from './types.ts';

export function createSettingsSlice(client: ReinClient): Slice<SettingsSlice> {
  return (set) => ({
    settings: null,
    settingsError: null,
    loadSettings: async () => {
      try {
        set({ settings: await client.getSettings({}), settingsError: null });
      } catch (e) {
        set({ settingsError: toApiError(e) });
      }
    },
    applySettings: (changed) => set((s) => (s.settings ? { settings: { ...s.settings, ...changed } } : {})),
    saveSettings: async (values) => {
      try {
        set({ settings: await client.setSettings({ values }), settingsError: null });
      } catch (e) {
        set({ settingsError: toApiError(e) });
      }
    },
  });
}

export const selectCapturePaused = (s: ReinState) => s.settings?.['capture.paused'] ?? s.status?.capture.paused ?? false;
export const selectAutoTraining = (s: ReinState) => s.settings?.['training.auto'] ?? null;
