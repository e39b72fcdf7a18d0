// `rein settings`, `rein settings get <key>`, `rein settings set key=value ...`. Values are JSON where they parse as
// JSON (numbers, booleans, arrays, null) and plain strings otherwise; a value that parses as JSON the setting does not
// take but is a string it does take stays a string (an all-digit API key). The core validates each against the table.
import { SETTING_KEYS, SETTINGS, isSettingKey } from '../../common/config.ts';
import { BadInputError } from '../../common/errors.ts';
import { registerCommand } from '../dispatch.ts';
import { restartNotice } from './format.ts';

function parseAssignment(arg: string): [string, unknown] {
  const eq = arg.indexOf('=');
  if (eq <= 0) throw new BadInputError(`expected key=value, not ${JSON.stringify(arg)}`, 'argv');
  const key = arg.slice(0, eq).trim();
  if (!isSettingKey(key)) throw new BadInputError(`unknown setting "${key}"; run "rein settings" for the list`, key);
  const raw = arg.slice(eq + 1);
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return [key, raw];
  }
  const schema = SETTINGS[key].schema;
  return [key, !schema.safeParse(value).success && schema.safeParse(raw).success ? raw : value];
}

registerCommand({
  name: 'settings',
  summary: 'Show settings, read one, or change some.',
  usage: 'rein settings [get <key> | set <key>=<value> ...]',
  description: `Keys: ${SETTING_KEYS.join(', ')}.`,
  args: [0, 64],
  async run(ctx) {
    const [sub, ...rest] = ctx.args;
    const api = await ctx.api();
    if (sub === undefined) {
      const values = await api.call('getSettings', {});
      const lines = SETTING_KEYS.map((k) => `${k.padEnd(28)} ${JSON.stringify(values[k]).padEnd(24)} ${SETTINGS[k].help}`);
      ctx.print(lines.join('\n'), values);
      return;
    }
    if (sub === 'get') {
      if (rest.length !== 1) throw new BadInputError('usage: rein settings get <key>', 'argv');
      const key = rest[0];
      if (!isSettingKey(key)) throw new BadInputError(`unknown setting "${key}"; run "rein settings" for the list`, key);
      const values = await api.call('getSettings', {});
      ctx.print(JSON.stringify(values[key]), { [key]: values[key] });
      return;
    }
    if (sub === 'set') {
      if (rest.length === 0) throw new BadInputError('usage: rein settings set <key>=<value> ...', 'argv');
      const changes = Object.fromEntries(rest.map(parseAssignment));
      const values = await api.call('setSettings', { values: changes });
      ctx.print(Object.keys(changes).map((k) => `${k} = ${JSON.stringify(values[k as keyof typeof values])}`).join('\n'), values);
      restartNotice(ctx, values);
      return;
    }
    throw new BadInputError(`unknown settings subcommand "${sub}": use get or set`, 'argv');
  },
});
