// The `rein` command dispatcher. Command modules call `registerCommand` (see commands/index.ts); a name may have
// several words (`model tiny`), and the longest registered prefix of argv wins. Flags are parsed per command with
// node:util parseArgs; `--json`, `--help` and `--direct` are global. Errors become one line on stderr and an exit
// code from EXIT_CODE.
import { parseArgs } from 'node:util';
import type { ParseArgsOptionDescriptor } from 'node:util';
import { EXIT_CODE, BadInputError, ReinError } from '../common/errors.ts';
import type { ErrorBody } from '../common/errors.ts';
import { resolveHome } from '../node/home.ts';
import type { ReinHome } from '../node/home.ts';
import { openApi } from './connect.ts';
import type { CliApi } from './connect.ts';

export interface CliIO {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  stdin: NodeJS.ReadableStream;
  stdinIsTTY: boolean;
  env: NodeJS.ProcessEnv;
  cwd: string;
}

export interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
  multiple?: boolean;
  /** Shown in `--help`; `<value>` names the argument. */
  help: string;
}

export type OptionValues = Record<string, string | boolean | string[] | undefined>;

export interface CommandContext {
  /** Positional arguments after the command's name. */
  args: string[];
  options: OptionValues;
  json: boolean;
  io: CliIO;
  home: ReinHome;
  /** The running core over HTTP, or the store directly when none runs (or with --direct). Opened on first use. */
  api(): Promise<CliApi>;
  /** Print `data` as one JSON line with --json, else the human text. */
  print(human: string, data: unknown): void;
}

export interface Command {
  name: string;
  summary: string;
  /** e.g. `rein rate <1-5> [--session <id>]` */
  usage: string;
  /** Longer help text, shown by `--help`. */
  description?: string;
  options?: Record<string, OptionSpec>;
  /** Positional arguments allowed: [min, max]. Default [0, 0]. */
  args?: [number, number];
  run(ctx: CommandContext): Promise<number | void>;
}

const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  json: { type: 'boolean', help: 'print machine-readable JSON (one document, or one line per record with --stdin)' },
  help: { type: 'boolean', short: 'h', help: 'show help for this command' },
  direct: { type: 'boolean', help: 'open the store directly even when a core is running' },
};

const registry = new Map<string, Command>();

export function registerCommand(cmd: Command): void {
  if (registry.has(cmd.name)) throw new Error(`rein: command "${cmd.name}" registered twice`);
  registry.set(cmd.name, cmd);
}

export function commands(): Command[] {
  return [...registry.values()].sort((a, b) => a.name.localeCompare(b.name));
}

function findCommand(argv: string[]): { cmd: Command; rest: string[] } | null {
  const words = [];
  for (const a of argv) {
    if (a.startsWith('-')) break;
    words.push(a);
  }
  for (let n = words.length; n > 0; n--) {
    const cmd = registry.get(words.slice(0, n).join(' '));
    // The command's words are argv's first n entries (no flag comes before them).
    if (cmd) return { cmd, rest: argv.slice(n) };
  }
  return null;
}

function optionLines(options: Record<string, OptionSpec>): string[] {
  return Object.entries(options).map(([name, o]) => {
    const flag = `${o.short ? `-${o.short}, ` : ''}--${name}${o.type === 'string' ? ' <value>' : ''}`;
    return `  ${flag.padEnd(28)} ${o.help}${o.multiple ? ' (repeatable)' : ''}`;
  });
}

export function commandHelp(cmd: Command): string {
  const lines = [`Usage: ${cmd.usage}`, '', cmd.summary];
  if (cmd.description) lines.push('', cmd.description);
  lines.push('', 'Options:', ...optionLines({ ...(cmd.options ?? {}), ...GLOBAL_OPTIONS }));
  return lines.join('\n') + '\n';
}

export function mainHelp(): string {
  const width = Math.max(...commands().map((c) => c.name.length)) + 2;
  return [
    'Usage: rein <command> [options]   (rein <command> --help for its options)',
    '',
    'Rate your coding agent\'s answers; your local model gets better in the background.',
    '',
    'Commands:',
    ...commands().map((c) => `  ${c.name.padEnd(width)} ${c.summary}`),
    '',
    'Global options:',
    ...optionLines(GLOBAL_OPTIONS),
    '',
    'The Rein home is ~/.rein, or $REIN_HOME. Exit codes: 0 ok, 1 internal, 2 bad input, 3 not found,',
    '4 conflict or locked, 5 not available, 6 unauthorized, 7 rate limited.',
    '',
  ].join('\n');
}

function errorLine(e: ReinError): string {
  return `rein: ${e.message}${e.field && !e.message.includes(e.field) ? ` (field ${e.field})` : ''}`;
}

export async function runCli(argv: string[], io: CliIO): Promise<number> {
  const json = argv.includes('--json');
  // Held in an object: TS cannot see the assignment inside `ctx.api` and would narrow a plain `let` to null.
  const opened: { api: CliApi | null } = { api: null };
  try {
    // Global flags may also come before the command's name (`rein --direct rate --stdin`).
    const leading: string[] = [];
    let words = argv;
    while (words.length > 0 && ['--json', '--direct', '--help', '-h'].includes(words[0])) {
      leading.push(words[0]);
      words = words.slice(1);
    }
    if (words.length === 0 || words[0] === 'help') {
      const topic = words[0] === 'help' ? findCommand(words.slice(1)) : null;
      io.stdout(topic ? commandHelp(topic.cmd) : mainHelp());
      return argv.length === 0 ? EXIT_CODE.bad_input : 0;
    }
    const found = findCommand(words);
    if (!found) {
      throw new BadInputError(`unknown command "${argv.filter((a) => !a.startsWith('-')).join(' ') || argv[0]}"; run "rein --help"`, 'command');
    }
    const { cmd, rest } = found;
    const specs = { ...(cmd.options ?? {}), ...GLOBAL_OPTIONS };
    const options: Record<string, ParseArgsOptionDescriptor> = {};
    for (const [k, o] of Object.entries(specs)) {
      options[k] = { type: o.type, ...(o.short ? { short: o.short } : {}), ...(o.multiple ? { multiple: true } : {}) };
    }
    let parsed: { values: OptionValues; positionals: string[] };
    try {
      parsed = parseArgs({ args: [...rest, ...leading], options, allowPositionals: true, strict: true }) as typeof parsed;
    } catch (e) {
      throw new BadInputError(`${(e as Error).message.split('\n')[0]} (see "rein ${cmd.name} --help")`, 'argv');
    }
    if (parsed.values.help) {
      io.stdout(commandHelp(cmd));
      return 0;
    }
    const [min, max] = cmd.args ?? [0, 0];
    if (parsed.positionals.length < min || parsed.positionals.length > max) {
      throw new BadInputError(
        `"rein ${cmd.name}" takes ${min === max ? min : `${min} to ${max}`} argument${max === 1 ? '' : 's'}; usage: ${cmd.usage}`,
        'argv',
      );
    }
    const home = resolveHome(io.env);
    const ctx: CommandContext = {
      args: parsed.positionals,
      options: parsed.values,
      json,
      io,
      home,
      async api() {
        opened.api ??= await openApi(home, { direct: parsed.values.direct === true });
        return opened.api;
      },
      print(human, data) {
        io.stdout(json ? JSON.stringify(data) + '\n' : human.endsWith('\n') || human === '' ? human : human + '\n');
      },
    };
    return (await cmd.run(ctx)) ?? 0;
  } catch (e) {
    const err = e instanceof ReinError ? e : new ReinError('internal', (e as Error)?.message ?? String(e), { cause: e });
    if (!(e instanceof ReinError) && io.env.REIN_DEBUG) io.stderr(`${(e as Error)?.stack}\n`);
    io.stderr(json ? JSON.stringify({ error: err.toBody() satisfies ErrorBody }) + '\n' : errorLine(err) + '\n');
    return EXIT_CODE[err.code];
  } finally {
    opened.api?.close();
  }
}
