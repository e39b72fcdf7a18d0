// Static files of the built renderer (out/renderer). Paths are resolved inside the root and checked again after
// following symlinks, so `..`, encoded slashes and links out of the root cannot read other files.
import { createReadStream, realpathSync, statSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import path from 'node:path';
import { NotFoundError } from '../../common/errors.ts';

const MIME: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.txt': 'text/plain; charset=utf-8',
  '.wasm': 'application/wasm',
};

/**
 * The renderer's Content-Security-Policy: only this origin's scripts, styles, images and fonts; API calls only back
 * to this origin; no inline script, no eval, no framing, no plugins, no form posts. React sets styles through the
 * CSSOM, which `style-src` does not restrict, so inline styles are not needed either.
 */
export const RENDERER_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "object-src 'none'",
].join('; ');

export const STATIC_HEADERS: Record<string, string> = {
  'content-security-policy': RENDERER_CSP,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

/** Resolve a URL path to a file inside `root`, or throw NotFoundError. Paths without an extension fall back to index.html. */
export function resolveStatic(root: string, urlPath: string): string {
  let decoded: string;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    throw new NotFoundError(`no such file: ${urlPath}`);
  }
  if (decoded.includes('\0') || decoded.includes('\\')) throw new NotFoundError(`no such file: ${urlPath}`);
  const realRoot = realpathSync(root);
  const rel = path.posix.normalize(decoded).replace(/^\/+/, '');
  if (rel.split('/').includes('..')) throw new NotFoundError(`no such file: ${urlPath}`);
  let candidate = path.join(realRoot, rel === '' || rel.endsWith('/') ? path.join(rel, 'index.html') : rel);
  let st = statOrNull(candidate);
  if (st?.isDirectory()) {
    candidate = path.join(candidate, 'index.html');
    st = statOrNull(candidate);
  }
  // Client-side routes (no extension) get the app shell; a missing asset stays a 404.
  if (!st && path.extname(rel) === '') {
    candidate = path.join(realRoot, 'index.html');
    st = statOrNull(candidate);
  }
  if (!st || !st.isFile()) throw new NotFoundError(`no such file: ${urlPath}`);
  const real = realpathSync(candidate);
  if (real !== realRoot && !real.startsWith(realRoot + path.sep)) throw new NotFoundError(`no such file: ${urlPath}`);
  return real;
}

function statOrNull(p: string) {
  try {
    return statSync(p);
  } catch {
    return null;
  }
}

export function serveStatic(root: string, urlPath: string, method: 'GET' | 'HEAD', res: ServerResponse): void {
  const file = resolveStatic(root, urlPath);
  const ext = path.extname(file).toLowerCase();
  const size = statSync(file).size;
  res.writeHead(200, {
    ...STATIC_HEADERS,
    'content-type': MIME[ext] ?? 'application/octet-stream',
    'content-length': String(size),
    // The shell must be re-read after a rebuild; Vite's hashed assets could be cached, but loopback is cheap.
    'cache-control': 'no-cache',
  });
  if (method === 'HEAD') {
    res.end();
    return;
  }
  createReadStream(file).on('error', () => res.destroy()).pipe(res);
}
