// The app's own files under resources/ (the small LM, the OpenClaw plugin). Found by walking up from this module,
// because the same code runs from its source file (src-main/node/…, under Node's type stripping) and bundled into
// out/main/*.js by electron-vite, whose depth differs; a path fixed relative to one of them is wrong in the other.
import { existsSync } from 'node:fs';
import path from 'node:path';

/** The absolute path of resources/<name>; the first ancestor of this module that holds it wins. */
export function resourceDir(name: string): string {
  let dir = import.meta.dirname;
  for (;;) {
    const candidate = path.join(dir, 'resources', name);
    if (existsSync(candidate)) return candidate;
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`resources/${name} was not found above ${import.meta.dirname}`);
    dir = up;
  }
}
