// The one reading of settings (issue #12, item 10): every stored value is validated against the typed table in
// common/config.ts, and the core, the scheduler, the training round and the reward mapper all read through here, so
// no caller keeps a literal default or casts a raw value. A stored value that no longer validates (written by an older
// Rein, or edited by hand) reads as its default, with one warning on stderr naming the key and the value; the row is
// kept, so nothing is lost and `rein settings set` can fix it.
import { defaultSettings, isSettingKey, SETTINGS, type SettingKey, type Settings } from '../../common/config.ts';
import type { Store } from './store.ts';

// Warned once per key and value in a process: settings are read on every status call and every rating.
const warned = new Set<string>();

/**
 * Stored shapes an earlier build wrote that are still meant, upgraded before validation so they are not reset.
 * training.custom.heldoutFraction (the newest pending share withheld for the gate) is gone: every pending rating
 * trains now, and a custom preset that still carries it keeps its other fields.
 */
const UPGRADES: Partial<Record<SettingKey, (v: unknown) => unknown>> = {
  'training.custom': (v) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v) || !('heldoutFraction' in v)) return v;
    const { heldoutFraction: _legacy, ...rest } = v as Record<string, unknown>;
    return rest;
  },
};

export function readSettings(store: Store): Settings {
  const out = defaultSettings() as Record<string, unknown>;
  for (const [k, v] of store.readSettingsRaw()) {
    if (!isSettingKey(k)) continue; // a setting this Rein does not know (a newer or removed one) is kept, unread
    const upgrade = UPGRADES[k];
    const parsed = SETTINGS[k].schema.safeParse(upgrade === undefined ? v : upgrade(v));
    if (parsed.success) {
      out[k] = parsed.data;
      continue;
    }
    const shown = JSON.stringify(v)?.slice(0, 200) ?? String(v);
    const once = `${k}=${shown}`;
    if (!warned.has(once)) {
      warned.add(once);
      const issue = parsed.error.issues[0];
      const why = issue === undefined ? 'invalid' : `${issue.path.length > 0 ? `${issue.path.join('.')}: ` : ''}${issue.message}`;
      process.stderr.write(`rein: setting ${k} has an invalid stored value ${shown} (${why}); using the default ${JSON.stringify(SETTINGS[k].default)}\n`);
    }
  }
  return out as Settings;
}
