// Request guards of the capture server: the DNS-rebinding check on Host and Origin, the token check, and the
// request-rate limit. Each returns null when the request may pass, or the ReinError to answer with.
import { timingSafeEqual, createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { ReinError } from '../../common/errors.ts';

/** Host names a browser can reach this server under: a rebinding attack arrives with the attacker's name instead. */
const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];

export function checkHostAndOrigin(headers: IncomingHttpHeaders, port: number): ReinError | null {
  const host = headers.host;
  const allowed = LOOPBACK_NAMES.map((n) => `${n}:${port}`);
  if (host === undefined || !allowed.includes(host.toLowerCase())) {
    return new ReinError('forbidden', `Host ${JSON.stringify(host ?? '')} is not a loopback address of this server`, {
      field: 'host',
    });
  }
  const origin = headers.origin;
  // No Origin: a non-browser client (curl, the CLI, a hook). A browser sends it on every cross-origin request and
  // on every POST, so a page from elsewhere cannot pass this check.
  if (origin !== undefined && !allowed.map((a) => `http://${a}`).includes(origin.toLowerCase())) {
    return new ReinError('forbidden', `Origin ${JSON.stringify(origin)} is not this server`, { field: 'origin' });
  }
  return null;
}

/** The token from `Authorization: Bearer <t>` or `X-Rein-Token: <t>`, or undefined. */
export function presentedToken(headers: IncomingHttpHeaders): string | undefined {
  const auth = headers.authorization;
  if (typeof auth === 'string') {
    const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(auth);
    if (m) return m[1];
  }
  const x = headers['x-rein-token'];
  return typeof x === 'string' && x.length > 0 ? x.trim() : undefined;
}

/**
 * Constant-time comparison that does not leak the token's length either: both sides are hashed to 32 bytes first,
 * so `timingSafeEqual` always compares equal-length buffers (it throws on unequal lengths).
 */
export function tokenMatches(presented: string | undefined, expected: string): boolean {
  if (presented === undefined) return false;
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

export function checkToken(headers: IncomingHttpHeaders, expected: string): ReinError | null {
  const t = presentedToken(headers);
  if (t === undefined) {
    return new ReinError('unauthorized', 'missing token: send "Authorization: Bearer <token>" or "X-Rein-Token" (the token is in the Rein home)');
  }
  if (!tokenMatches(t, expected)) return new ReinError('unauthorized', 'wrong token');
  return null;
}

/**
 * Whether a browser sent this request for a page of another site (an `<img>`, a form, a script on any web page).
 * Browsers send Sec-Fetch-Site on every request (Chromium 76, Firefox 90, Safari 16.4) and a page cannot set it
 * (a forbidden header name, Fetch Metadata, W3C). `same-site` counts as another site: a page on another port of
 * 127.0.0.1 is same-site. The user's own page is `same-origin` (its scripts) or `none` (the address typed or opened);
 * clients that are not browsers send no such header.
 */
export function fromAnotherSite(headers: IncomingHttpHeaders): boolean {
  const site = headers['sec-fetch-site'];
  return site === 'cross-site' || site === 'same-site';
}

/**
 * A token bucket holding up to `perMinute` requests and refilled at perMinute/60 per second: a burst of a full
 * minute's allowance passes, then requests are spaced evenly. Loopback has one client address, so the bucket is global.
 */
export class RateLimiter {
  private perMinute: number;
  private tokens: number;
  private last: number;
  private readonly now: () => number;

  constructor(perMinute: number, now: () => number = () => performance.now()) {
    this.perMinute = perMinute;
    this.tokens = perMinute;
    this.now = now;
    this.last = now();
  }

  setLimit(perMinute: number): void {
    this.refill();
    this.perMinute = perMinute;
    this.tokens = Math.min(this.tokens, perMinute);
  }

  get limit(): number {
    return this.perMinute;
  }

  /** Take one request; returns 0 when allowed, else the seconds until the next one would be (for Retry-After). */
  take(): number {
    this.refill();
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    const msPerToken = 60_000 / this.perMinute;
    return Math.max(1, Math.ceil(((1 - this.tokens) * msPerToken) / 1000));
  }

  private refill(): void {
    const t = this.now();
    this.tokens = Math.min(this.perMinute, this.tokens + ((t - this.last) * this.perMinute) / 60_000);
    this.last = t;
  }
}
