// Hook handlers never raise to the agent: what goes wrong is logged with a reason, and the agent gets a
// non-blocking answer. The logger is injected so the server, the CLI and tests each route it their own way.
export type LogLevel = 'info' | 'warn' | 'error';
export type HookLog = (level: LogLevel, message: string, detail?: Record<string, unknown>) => void;

export const stderrLog: HookLog = (level, message, detail) => {
  process.stderr.write(`rein hooks ${level}: ${message}${detail ? ' ' + JSON.stringify(detail) : ''}\n`);
};

/** A logger that keeps its lines, for tests and for `--dry-run` style reports. */
export function memoryLog(): HookLog & { lines: { level: LogLevel; message: string; detail?: Record<string, unknown> }[] } {
  const lines: { level: LogLevel; message: string; detail?: Record<string, unknown> }[] = [];
  const fn = ((level: LogLevel, message: string, detail?: Record<string, unknown>) => {
    lines.push(detail === undefined ? { level, message } : { level, message, detail });
  }) as HookLog & { lines: typeof lines };
  fn.lines = lines;
  return fn;
}
