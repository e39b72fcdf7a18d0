// Types for hook-entry.mjs, the plain-JavaScript Codex hook entry (plain JS so Codex's per-turn processes skip
// TypeScript type stripping; see that file).
export declare const SPOOL_MAX_BYTES: number;
export declare const POST_TIMEOUT_MS: number;
export interface HookTarget {
  port: number;
  token: string;
}
export declare function homeDir(env?: NodeJS.ProcessEnv): string;
export declare function chainPath(dir: string): string;
export declare function spoolPath(dir: string): string;
export declare function readChain(dir: string): string[] | null;
export declare function chainPrevious(previous: string[] | null, arg: string): boolean;
export declare function readTarget(dir: string): HookTarget | null;
export declare function parseResponse(raw: Buffer): { status: number; body: string };
export declare function postHook(target: HookTarget, route: string, body: string, timeoutMs?: number): Promise<unknown>;
export declare function spool(dir: string, body: string): boolean;
export declare function drainSpool(dir: string, target: HookTarget): Promise<{ sent: number; kept: number }>;
export declare function codexNotify(argv: string[], dir: string): Promise<number>;
export declare function codexHook(stdin: NodeJS.ReadableStream, out: (s: string) => void, dir: string): Promise<number>;
export declare function runHook(argv: string[], io: { stdin: NodeJS.ReadableStream; stdout: (s: string) => void; env: NodeJS.ProcessEnv }): Promise<number>;
