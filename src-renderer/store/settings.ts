import type { SettingDescription } from '../../src-main/common/config.ts';
import type { ReinClient } from '../services/api.ts';
import { toApiError } from '../services/api.ts';
import { derive } from './derive.ts';
import type { ReinState, SettingsSlice, Slice } from './types.ts';

export function createSettingsSlice(client: ReinClient): Slice<SettingsSlice> {
  return (set, get) => ({
    settings: null,
    settingsError: null,
    settingDescriptions: null,
    settingErrors: {},
    settingSaved: null,
    settingFocus: null,
    mapperTrial: null,
    mapperError: null,
    loadSettings: async () => {
      try {
        set({ settings: await client.getSettings({}), settingsError: null });
      } catch (e) {
        set({ settingsError: toApiError(e) });
      }
    },
    loadSettingDescriptions: async () => {
      if (get().settingDescriptions) return;
      try {
        set({ settingDescriptions: await client.describeSettings({}) });
      } catch (e) {
        set({ settingsError: toApiError(e) });
      }
    },
    applySettings: (changed) => set((s) => (s.settings ? { settings: { ...s.settings, ...changed } } : {})),
    saveSettings: async (values) => {
      const keys = Object.keys(values);
      try {
        const settings = await client.setSettings({ values });
        const settingErrors = { ...get().settingErrors };
        for (const k of keys) delete settingErrors[k];
        set({ settings, settingsError: null, settingErrors, settingSaved: keys.length === 1 ? keys[0]! : null });
        return true;
      } catch (e) {
        const err = toApiError(e);
        // The core names the setting a bad value belongs to: the message goes beside that field.
        if (err.field !== undefined && keys.includes(err.field)) {
          set({ settingErrors: { ...get().settingErrors, [err.field]: settingMessage(err.message, err.field) }, settingSaved: null });
        } else {
          set({ settingsError: err, settingSaved: null });
        }
        return false;
      }
    },
    setSettingError: (key, message) =>
      set((s) => {
        const settingErrors = { ...s.settingErrors };
        if (message === null) delete settingErrors[key];
        else settingErrors[key] = message;
        return { settingErrors };
      }),
    openSetting: (key) => set({ view: 'settings', settingFocus: key }),
    clearSettingFocus: () => set({ settingFocus: null }),
    tryMapper: async (source) => {
      set({ mapperTrial: null, mapperError: null });
      try {
        set({ mapperTrial: { source, ...(await client.testRewardMapper({ source })) } });
      } catch (e) {
        set({ mapperError: settingMessage(toApiError(e).message, 'training.rewardMapper') });
      }
    },
  });
}

/**
 * "setSettings: popup.timeoutSeconds: Too small…" → "Too small…", and "setSettings: publish.ollama.url: Invalid URL" →
 * "url: Invalid URL": the field the message sits beside already names the setting.
 */
export function settingMessage(message: string, key: string): string {
  const m = message.replace(/^setSettings: /, '');
  if (m.startsWith(`${key}: `)) return m.slice(key.length + 2);
  if (m.startsWith(`${key}.`)) return m.slice(key.length + 1);
  return m;
}

export const selectCapturePaused = (s: ReinState) => s.settings?.['capture.paused'] ?? s.status?.capture.paused ?? false;
export const selectAutoTraining = (s: ReinState) => s.settings?.['training.auto'] ?? null;

/** The Settings screen's sections, in the order a person looks for them; groups come from common/config.ts. */
export const SETTING_GROUPS: { group: string; title: string; blurb: string }[] = [
  { group: 'capture', title: 'Capture', blurb: 'Which answers are stored, and for how long they can be rated.' },
  { group: 'popup', title: 'Popup', blurb: 'The Good / Bad question after each answer.' },
  { group: 'training', title: 'Training', blurb: 'When rounds start, how hard they push, and how ratings become rewards.' },
  { group: 'reward', title: 'Reward model', blurb: 'When the popup asks, and how the reward model weighs in on the gate and training.' },
  { group: 'adapters', title: 'Versions and publishing', blurb: 'Which trained versions are kept, and where each new one is published.' },
  { group: 'server', title: 'Server and proxy', blurb: 'The local capture server, and the OpenAI-compatible proxy for other clients.' },
  { group: 'model', title: 'Model', blurb: 'The model being trained and served.' },
  { group: 'app', title: 'App', blurb: '' },
];

export const selectSettingSections = derive([(s: ReinState) => s.settingDescriptions], (descriptions) => {
  const all = descriptions ?? [];
  const known = new Set(SETTING_GROUPS.map((g) => g.group));
  const sections: { group: string; title: string; blurb: string; items: SettingDescription[] }[] = SETTING_GROUPS.map((g) => ({ ...g, items: all.filter((d) => d.group === g.group) }));
  // A group added to the schema later still shows, under its own name.
  for (const d of all) {
    if (known.has(d.group)) continue;
    known.add(d.group);
    sections.push({ group: d.group, title: d.group, blurb: '', items: all.filter((x) => x.group === d.group) });
  }
  return sections.filter((g) => g.items.length > 0);
});
