// Is an agent installed? Its binary on PATH, or its config directory.
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import path from 'node:path';

export function onPath(bin: string, env: Record<string, string | undefined>): string | null {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (dir === '') continue;
    const p = path.join(dir, bin);
    try {
      accessSync(p, constants.X_OK);
      if (statSync(p).isFile()) return p;
    } catch {
      // not here
    }
  }
  return null;
}

export function evidence(bin: string, dirs: string[], env: Record<string, string | undefined>): { installed: boolean; evidence: string[] } {
  const found: string[] = [];
  const b = onPath(bin, env);
  if (b) found.push(`${bin} on PATH: ${b}`);
  for (const d of dirs) if (existsSync(d)) found.push(`config dir: ${d}`);
  return { installed: found.length > 0, evidence: found };
}
