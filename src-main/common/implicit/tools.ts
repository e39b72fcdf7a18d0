// What an agent turn's tool calls say about its answer, read from the turn's stored context (the shape of
// integrations/claude/transcript.ts and serving/agent-turn.ts: {role: 'assistant', type: 'tool_use', name, content:
// the input's JSON}, then {role: 'tool', type: 'tool_result', content, is_error?}). Two signals come from here:
//
// - revert: the file edits a turn made, as (old text, new text) pairs the node side can undo on the file it reads
//   after the turn, to know the file's content before it (node/core/edit-watch.ts);
// - contradiction: the answer claims the tests pass or the build succeeds, and a test or build run says otherwise.
//
// Every matcher here is written to say nothing when unsure: a claim is a plain statement, not a wish ("make sure the
// tests pass") or a hedge ("should pass"); a run fails only on a test runner's or compiler's own failure line, or an
// exit status the client reported. Pure: no file system; the node side reads files.
import type { ContextMessage } from '../domain.ts';

/**
 * How long after the turn that made an edit a restored file still counts as the user reverting it: 30 minutes. A user
 * who rejects an edit does it while the answer is on screen, reading the diff (`git checkout -- file`, the editor's
 * undo, the IDE's "discard change"); past half an hour a file back at its old content is as likely a branch switch, a
 * stash or a change of mind about something else. The watch is checked once, at the session's next prompt (or, without
 * a prompt hook, when its next turn is stored).
 */
export const REVERT_WINDOW_MS = 30 * 60_000;

/** Files larger than this are never read for a revert (a generated bundle, a lock file, a data file). */
export const REVERT_MAX_FILE_BYTES = 1024 * 1024;

/** One replacement an edit made in a file: `before` was replaced by `after`. */
export interface Replacement {
  before: string;
  after: string;
}

/**
 * The edits one turn made to one file, in order, when each can be undone from the text after it. `undoable` is false
 * when the turn touched the file in a way Rein cannot reverse (a Write of the whole file, replace_all, a deletion of
 * text that leaves nothing to find): such a file is not watched.
 */
export interface FileEdits {
  /** The path as the tool call named it (Claude Code: absolute; relative ones are taken from the session's cwd). */
  path: string;
  replacements: Replacement[];
  undoable: boolean;
  /** The tool names that edited it, for the signal's detail. */
  tools: string[];
}

export interface ToolCall {
  name: string;
  input: Record<string, unknown> | null;
  /** The call's result, when the context holds one. */
  result: { content: string; isError: boolean } | null;
}

function parseInput(content: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(content);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    // The transcript reader cuts a long input at 4,000 characters: a cut JSON is no input Rein can read.
    return null;
  }
}

/**
 * The tool calls of a context, each with its result: by tool_use_id where both sides carry one (Claude Code's
 * transcript), else the next unanswered call in order (the proxy's agent route keeps the order of the calls).
 */
export function toolCalls(context: readonly ContextMessage[]): ToolCall[] {
  const calls: (ToolCall & { id: unknown })[] = [];
  const open: number[] = [];
  for (const m of context) {
    if (m.type === 'tool_use') {
      calls.push({ name: typeof m.name === 'string' ? m.name : 'tool', input: parseInput(m.content), result: null, id: m.tool_use_id });
      open.push(calls.length - 1);
    } else if (m.type === 'tool_result' && open.length > 0) {
      // A result that names a call answers that one; one that names none answers the oldest call still open.
      const named = m.tool_use_id !== undefined && open.some((i) => calls[i]!.id !== undefined);
      const at = named ? open.findIndex((i) => calls[i]!.id === m.tool_use_id) : 0;
      if (at < 0) continue;
      const i = open.splice(at, 1)[0]!;
      calls[i]!.result = { content: m.content, isError: m.is_error === true };
    }
  }
  return calls.map(({ id: _id, ...c }) => c);
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/**
 * The files a turn's tool calls edited (Claude Code's Edit, MultiEdit and Write; NotebookEdit is not read). An Edit
 * undoes when its new text is there to find; a Write replaces the whole file and its old content is in no tool call,
 * so a file a Write touched is not undoable.
 */
export function fileEdits(context: readonly ContextMessage[]): FileEdits[] {
  const byPath = new Map<string, FileEdits>();
  const entry = (path: string, tool: string): FileEdits => {
    let e = byPath.get(path);
    if (e === undefined) byPath.set(path, (e = { path, replacements: [], undoable: true, tools: [] }));
    if (!e.tools.includes(tool)) e.tools.push(tool);
    return e;
  };
  for (const c of toolCalls(context)) {
    const path = str(c.input?.file_path);
    if (path === null || path === '') continue;
    // A call the tool refused (old_string not found, the user said no) changed nothing.
    if (c.result?.isError === true) continue;
    if (c.name === 'Edit' || c.name === 'MultiEdit') {
      const e = entry(path, c.name);
      const list = c.name === 'Edit' ? [c.input] : Array.isArray(c.input?.edits) ? (c.input.edits as unknown[]) : [];
      if (list.length === 0) e.undoable = false;
      for (const x of list) {
        const o = x !== null && typeof x === 'object' ? (x as Record<string, unknown>) : {};
        const before = str(o.old_string);
        const after = str(o.new_string);
        // replace_all may have replaced text that was there twice; an empty new text leaves nothing to find.
        if (before === null || after === null || after === '' || o.replace_all === true) e.undoable = false;
        else e.replacements.push({ before, after });
      }
    } else if (c.name === 'Write' || c.name === 'NotebookEdit') {
      entry(path, c.name).undoable = false;
    }
  }
  return [...byPath.values()];
}

/**
 * The file's content before the turn's edits, from its content after them: each replacement undone, newest first.
 * Null when a new text is not found exactly once (something else changed the file, or the new text is common enough
 * that Rein cannot tell which copy the edit wrote): then the file's old content is unknown and it is not watched.
 */
export function undoEdits(after: string, edits: FileEdits): string | null {
  if (!edits.undoable) return null;
  let text = after;
  for (const r of [...edits.replacements].reverse()) {
    const at = text.indexOf(r.after);
    if (at < 0 || text.indexOf(r.after, at + 1) >= 0) return null;
    text = text.slice(0, at) + r.before + text.slice(at + r.after.length);
  }
  return text;
}

export type RunKind = 'test' | 'build';

// A test or build command, by the runner it names at the start of one of the command line's parts (`cd web && npm
// test`, `CI=1 npx vitest run`), so `cat vitest.config.ts` or `grep jest` is no run.
const LEAD = String.raw`(?:^|[;&|(]\s*)(?:\w+=\S*\s+)*`;
const TEST_COMMAND = new RegExp(
  LEAD +
    String.raw`(?:(?:npm|pnpm|yarn|bun)(?: run)? test\b|(?:npx |pnpm exec |yarn |bunx )?(?:vitest|jest|mocha|pytest|rspec|phpunit|ctest)\b|python3? -m (?:pytest|unittest)\b|go test\b|cargo test\b|make (?:test|check)\b|dotnet test\b|mvn\b[^;&|]* (?:test|verify)\b|(?:\./)?gradlew? test\b|mix test\b|deno test\b)`,
  'u',
);
const BUILD_COMMAND = new RegExp(
  LEAD +
    String.raw`(?:(?:npm|pnpm|yarn|bun)(?: run)? build\b|(?:npx )?tsc\b|cargo (?:build|check)\b|go build\b|dotnet build\b|mvn\b[^;&|]* (?:compile|package)\b|(?:\./)?gradlew? build\b|make(?:\s+all)?\s*(?:$|[;&|]))`,
  'u',
);

/** The command line of a shell tool call: Claude Code's Bash {command}, Codex's shell {command: [argv]} or {cmd}. */
export function commandOf(c: ToolCall): string | null {
  const v = c.input?.command ?? c.input?.cmd;
  if (typeof v === 'string') return v;
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) {
    // Codex runs ["bash", "-lc", "npm test"]: the script is the command.
    const argv = v as string[];
    return argv.length === 3 && /^(ba|z)?sh$/u.test(argv[0]!) && argv[1] === '-lc' ? argv[2]! : argv.join(' ');
  }
  return null;
}

export function runKind(command: string): RunKind | null {
  if (TEST_COMMAND.test(command)) return 'test';
  if (BUILD_COMMAND.test(command)) return 'build';
  return null;
}

/**
 * A shell result's text and the exit status the client wrote into it, when it wrote one: Claude Code's "Exit code 1"
 * line (the UI shows "Error: Exit code 1"), Codex's "Exit code: 1" line, or Codex's structured output {"output": "...",
 * "metadata": {"exit_code": 1}}, whose text is its `output`.
 */
export function shellResult(output: string): { text: string; status: number | null } {
  if (output.trimStart().startsWith('{')) {
    try {
      const v = JSON.parse(output) as { output?: unknown; metadata?: { exit_code?: unknown } };
      if (typeof v.output === 'string') return { text: v.output, status: typeof v.metadata?.exit_code === 'number' ? v.metadata.exit_code : null };
    } catch {
      // Not Codex's structured output: read as text.
    }
  }
  const m = /^(?:Error: )?Exit code:? (\d+)\b/mu.exec(output) ?? /\bProcess exited with code (\d+)\b/u.exec(output);
  return { text: output, status: m === null ? null : Number(m[1]) };
}

// A test runner's or compiler's own failure line: vitest and jest ("FAIL src/a.test.ts", "Tests  1 failed"), pytest
// ("FAILED tests/x.py::t", "1 failed, 3 passed"), go ("--- FAIL:", "FAIL\tpkg"), cargo ("test result: FAILED",
// "error[E0308]:"), tsc ("error TS2322:"), npm ("npm ERR! Test failed"). "0 failed" is not one.
const FAILURE_LINE = /^\s*(FAIL\b|--- FAIL:|FAILED\b|npm ERR!|error(\[E\d+\])?:|.*\berror TS\d+:|.*\btest result: FAILED\b|.*\b[1-9]\d* (tests? )?(failed|failing|failures?)\b|.*\bBUILD FAILED\b|.*\bBuild failed\b)/u;
// Lines that say failure only when the exit status already did ("Error: expected 1 to be 2", "3 checks failed").
const WEAK_FAILURE_LINE = /^\s*(.*\b(\w*Error|failed|failure)\b:?.*)$/u;

/** The line that says a run failed, or null when the run passed or its result says nothing Rein can be sure of. */
export function failingLine(output: string): string | null {
  const { text, status } = shellResult(output);
  const lines = text.split('\n');
  const strong = lines.find((l) => FAILURE_LINE.test(l));
  if (strong !== undefined && status !== 0) return strong.trim();
  // A non-zero status the client reported, with an error line of the run's own: that line names the failure. A status
  // with no such line is left alone: a broken shell tool answers "Exit code 1" to every command (Claude Code has done
  // so, with a full /tmp), and a result Claude Code marks as an error with no status at all (the user refused the
  // call, a timeout) says nothing about the tests either, so is_error alone is not read.
  if (status !== null && status !== 0) {
    // npm, pnpm and yarn echo the script before running it ("> test" then "> node --test test/apiError.test.js", as
    // Claude Code 2.1.330 reports `npm test`): that is the command, not an error line of the run.
    const weak = lines.find((l) => WEAK_FAILURE_LINE.test(l) && !/^(?:Error: )?Exit code/u.test(l) && !l.startsWith('> '));
    if (weak !== undefined) return weak.trim();
  }
  return null;
}

export interface Run {
  /** Position among the context's tool calls. */
  at: number;
  command: string;
  kind: RunKind;
  /** The failure line, or null when it passed. */
  failed: string | null;
}

/** The test and build runs of a context with their outcome (a run with no result yet is left out). */
export function runs(calls: readonly ToolCall[]): Run[] {
  const out: Run[] = [];
  calls.forEach((c, at) => {
    const command = commandOf(c);
    const kind = command === null ? null : runKind(command);
    if (command === null || kind === null || c.result === null) return;
    out.push({ at, command, kind, failed: failingLine(c.result.content) });
  });
  return out;
}

// Tools that only read. Any other call (an edit, a shell command that is not a plain read) may have changed what a
// test run sees, and a failure after it is no longer about the answer before.
const READ_TOOLS = new Set(['Read', 'Grep', 'Glob', 'LS', 'WebFetch', 'WebSearch', 'TodoWrite', 'read_file', 'list_dir', 'grep', 'view_image']);
const READ_COMMAND = /^\s*(ls|cat|head|tail|grep|rg|find|pwd|echo|wc|tree|which|file|stat|git (status|diff|log|show|branch|blame)|sed -n)\b[^;&|>]*$/u;

/** Whether a call may have changed the files a later run reads. */
export function mayWrite(c: ToolCall): boolean {
  if (READ_TOOLS.has(c.name)) return false;
  const command = commandOf(c);
  if (command === null) return true;
  return runKind(command) === null && !READ_COMMAND.test(command);
}

export interface Claim {
  kind: RunKind;
  /** The claim as the answer wrote it (its clause). */
  quote: string;
}

// Plain statements that the tests pass or the build succeeds, in English. Matched on the lower-cased answer.
const TEST_CLAIM = [
  /\ball (\d+ |the |of the )?(\w+ )?tests? (now )?(pass|passed|are passing|are green|succeed|succeeded)\b/u,
  /\b(the )?tests? (now )?(pass|passes|passed|are (now )?passing|are (now )?green|all pass|pass now)\b/u,
];
const BUILD_CLAIM = [
  /\b(the )?build (now )?(succeeds|succeeded|passes|is green|is passing|is clean|works)\b/u,
  /\b(builds|compiles) (now )?(successfully|cleanly|without (any )?errors)\b/u,
];
// A claim right after one of these is a wish, a condition, a hedge or a denial, not a statement.
const CLAIM_GUARD = /\b(if|once|until|unless|when|whether|make sure|ensure|verify|check|should|would|could|might|may|will|to|not|no|none|neither|nor|never|don'?t|doesn'?t|didn'?t|can'?t|cannot|hopefully|expect|assuming|so that|before|after)\W+(\w+\W+){0,3}$/u;

/** The answer's claim that the tests pass or the build succeeds, or null. A question is no claim. */
export function successClaim(answer: string): Claim | null {
  const sentences = answer.split(/(?<=[.!?;:\n])\s+/u);
  for (const s of sentences) {
    const low = s.toLowerCase();
    if (low.trim().endsWith('?')) continue;
    for (const [kind, list] of [['test', TEST_CLAIM], ['build', BUILD_CLAIM]] as const) {
      for (const re of list) {
        const m = re.exec(low);
        if (m === null) continue;
        if (CLAIM_GUARD.test(low.slice(0, m.index))) continue;
        // "tests pass locally but CI fails", "tests pass except one", "3 tests pass, 2 fail": the rest takes it back.
        if (/\b(but|except|apart from|other than|besides)\b|(?<!\b(no|without|zero|0) )\b(fail\w*|errors?|broken)\b/u.test(low.slice(m.index + m[0].length))) continue;
        return { kind, quote: s.trim().slice(0, 200) };
      }
    }
  }
  return null;
}

/** A run that contradicts a claim: the same kind, failed. */
export function contradicts(claim: Claim, run: Run): boolean {
  return run.failed !== null && run.kind === claim.kind;
}

/** The evidence of a contradiction, as the card shows it after "Rein read this as Bad because ". */
export function contradictionEvidence(claim: Claim, run: Run, later: boolean): string {
  const cmd = run.command.length > 120 ? `${run.command.slice(0, 117)}...` : run.command;
  const line = run.failed!.length > 200 ? `${run.failed!.slice(0, 197)}...` : run.failed!;
  return `the answer said "${claim.quote}", but \`${cmd}\` ${later ? 'then failed' : 'had failed'}: ${line}`;
}

/**
 * The contradiction inside one turn: the answer claims success, and the turn's own last run of that kind, with no
 * edit after it, failed (the agent said the tests pass over a red run). Null otherwise.
 */
export function contradictionWithin(context: readonly ContextMessage[], answer: string): { claim: Claim; run: Run } | null {
  const claim = successClaim(answer);
  if (claim === null) return null;
  const calls = toolCalls(context);
  const last = runs(calls).filter((r) => r.kind === claim.kind).at(-1);
  if (last === undefined || !contradicts(claim, last)) return null;
  if (calls.slice(last.at + 1).some(mayWrite)) return null;
  return { claim, run: last };
}

/**
 * The contradiction in the next turn: the previous answer claims success, and the next turn's first run of that
 * kind, before any call that may have changed files, failed. Null otherwise.
 */
export function contradictionNext(previousAnswer: string, next: readonly ContextMessage[]): { claim: Claim; run: Run } | null {
  const claim = successClaim(previousAnswer);
  if (claim === null) return null;
  const calls = toolCalls(next);
  const first = runs(calls).find((r) => r.kind === claim.kind);
  if (first === undefined || !contradicts(claim, first)) return null;
  if (calls.slice(0, first.at).some(mayWrite)) return null;
  return { claim, run: first };
}
