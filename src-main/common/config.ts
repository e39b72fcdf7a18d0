// One typed settings table: each entry has its schema, default and help text. It drives validation
// (store, HTTP, CLI), the `rein settings` output and the UI forms (which receive `describeSettings()`).
import { z } from 'zod';
import { CustomTrainingSchema } from './training/presets.ts';

interface SettingDef<S extends z.ZodType> {
  schema: S;
  default: z.infer<S>;
  help: string;
  group: 'capture' | 'training' | 'popup' | 'server' | 'adapters' | 'model';
}

function def<S extends z.ZodType>(schema: S, dflt: z.infer<S>, group: SettingDef<S>['group'], help: string): SettingDef<S> {
  return { schema, default: dflt, group, help };
}

export const SETTINGS = {
  'capture.paused': def(z.boolean(), false, 'capture', 'Stop storing new turns (do not disturb). Ratings still work.'),
  'capture.maxTextChars': def(
    z.number().int().min(1_000).max(5_000_000),
    200_000,
    'capture',
    'Longest prompt, response or context text stored; longer text is cut with a visible marker.',
  ),
  'capture.expireHours': def(
    z.number().min(0).max(24 * 365),
    72,
    'capture',
    'Hours after which an unrated turn can no longer be rated by `/rl` or `rein good` (0 = never).',
  ),
  'capture.agents': def(
    z.array(z.string().min(1).max(64)).max(32),
    ['claude-code', 'codex', 'openclaw', 'proxy', 'api'],
    'capture',
    'Sources whose turns are stored.',
  ),
  'training.threshold': def(
    z.number().int().min(1).max(10_000),
    32,
    'training',
    'Pending ratings that start a training round automatically.',
  ),
  'training.auto': def(z.boolean(), true, 'training', 'Train automatically when the threshold is reached.'),
  'training.preset': def(
    z.enum(['careful', 'balanced', 'aggressive', 'custom']),
    'balanced',
    'training',
    'How hard each round pushes the model: careful, balanced, aggressive, or custom.',
  ),
  'training.replayRatio': def(
    z.number().min(0).max(4),
    0.25,
    'training',
    'Older, already-trained ratings mixed into each round, as a fraction of the pending ones.',
  ),
  'training.custom': def(
    CustomTrainingSchema,
    {},
    'training',
    'Fields that override the balanced preset when training.preset is custom (see `rein presets` or describePresets for each field).',
  ),
  'training.onlyWhenIdle': def(z.boolean(), false, 'training', 'Wait until the computer is idle before training.'),
  'popup.enabled': def(z.boolean(), true, 'popup', 'Ask Good / Bad after each captured answer.'),
  'popup.timeoutSeconds': def(
    z.number().int().min(0).max(3600),
    45,
    'popup',
    'Seconds before an unanswered popup closes and the turn counts as ignored (0 = never).',
  ),
  'popup.agents': def(
    z.array(z.string().min(1).max(64)).max(32),
    ['claude-code', 'codex', 'openclaw', 'proxy', 'api'],
    'popup',
    'Sources whose turns raise the popup.',
  ),
  'server.port': def(
    z.number().int().min(1024).max(65535),
    7433,
    'server',
    'Loopback port of the capture server and the API.',
  ),
  'server.rateLimitPerMinute': def(
    z.number().int().min(10).max(1_000_000),
    6_000,
    'server',
    'Requests per minute the capture server accepts before answering 429.',
  ),
  'adapters.keepInactive': def(
    z.number().int().min(0).max(1000),
    5,
    'adapters',
    'Inactive adapter versions kept on disk; older ones are deleted (rejected ones are kept for inspection).',
  ),
  'model.active': def(
    z.string().min(1).max(4096).nullable(),
    null,
    'model',
    'The model being trained: an id registered with `rein model add` or by the wizard.',
  ),
} as const;

export type SettingKey = keyof typeof SETTINGS;
export type Settings = { [K in SettingKey]: z.infer<(typeof SETTINGS)[K]['schema']> };

export const SETTING_KEYS = Object.keys(SETTINGS) as SettingKey[];

export function defaultSettings(): Settings {
  const out: Record<string, unknown> = {};
  for (const k of SETTING_KEYS) out[k] = structuredClone(SETTINGS[k].default);
  return out as Settings;
}

export function isSettingKey(k: string): k is SettingKey {
  return Object.hasOwn(SETTINGS, k);
}

export interface SettingDescription {
  key: SettingKey;
  group: string;
  help: string;
  default: unknown;
  jsonSchema: unknown;
}

export function describeSettings(): SettingDescription[] {
  return SETTING_KEYS.map((key) => ({
    key,
    group: SETTINGS[key].group,
    help: SETTINGS[key].help,
    default: SETTINGS[key].default,
    jsonSchema: z.toJSONSchema(SETTINGS[key].schema),
  }));
}
