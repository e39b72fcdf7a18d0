// The benchmarks' command line, one parser for all of them: `name=value`, `--name value`, `--name=value` and a bare
// `--name` (a switch). A number that does not parse is an error naming the argument, not a NaN that runs a bench of
// nothing. (Each bench used to carry its own copy of one of two parsers.)

export interface BenchArgs {
  /** The arguments as given (a bench that re-runs itself in a child passes them on). */
  readonly raw: readonly string[];
  /** Whether `--name` or `name=…` was given. */
  has(name: string): boolean;
  str(name: string, dflt: string): string;
  num(name: string, dflt: number): number;
}

export function benchArgs(argv: readonly string[] = process.argv.slice(2)): BenchArgs {
  const values = new Map<string, string | null>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const dashed = a.startsWith('--');
    const body = dashed ? a.slice(2) : a;
    const eq = body.indexOf('=');
    if (eq > 0) values.set(body.slice(0, eq), body.slice(eq + 1));
    else if (dashed) {
      const next = argv[i + 1];
      const takes = next !== undefined && !next.startsWith('--') && !next.includes('=');
      values.set(body, takes ? next : null);
      if (takes) i++;
    } else throw new Error(`bench: argument ${JSON.stringify(a)} is neither name=value nor --name [value]`);
  }
  const str = (name: string, dflt: string): string => values.get(name) ?? dflt;
  return {
    raw: argv,
    has: (name) => values.has(name),
    str,
    num(name, dflt) {
      if (!values.has(name)) return dflt;
      const v = values.get(name);
      const x = v === null || v === undefined || v.trim() === '' ? NaN : Number(v);
      if (!Number.isFinite(x)) throw new Error(`bench: ${name} must be a number, got ${JSON.stringify(v)}`);
      return x;
    },
  };
}
