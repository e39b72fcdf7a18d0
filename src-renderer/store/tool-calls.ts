// A turn's tool calls as the card, the popup and the Ratings detail list them, read from its stored context. The
// Claude transcript (integrations/claude/transcript.ts) and the proxy's agent endpoints (serving/agent-turn.ts) store
// each call as {type: 'tool_use', name, content: the input's JSON, cut at 4,000 characters} and each result as
// {type: 'tool_result', content, tool_use_id?, is_error?}; the proxy names a result's tool instead of its id.
import type { ContextMessage } from '../../src-main/common/domain.ts';

export interface DiffLine {
  kind: 'same' | 'del' | 'add';
  text: string;
}

export interface ToolCall {
  name: string;
  /** One line naming what the call acted on: the command, the file, the pattern (empty when nothing fits). */
  target: string;
  /** More of the input than the target says (a command's other lines, then each other field as `name: value`), or null. */
  detail: string | null;
  /** The change an edit or a write made, as lines; null for other tools. */
  diff: DiffLine[] | null;
  /** The tool's output, or null when no result was captured. */
  output: string | null;
  isError: boolean;
}

const TARGET_KEYS = ['command', 'cmd', 'file_path', 'path', 'notebook_path', 'pattern', 'url', 'query', 'description', 'prompt'];
/** Unchanged lines kept on each side of an edit's change. */
const CONTEXT_LINES = 3;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function parseInput(text: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(text);
    return isRecord(v) ? v : null;
  } catch {
    // Cut when captured (or not JSON at all): shown as the text it is.
    return null;
  }
}

function asText(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v.join(' ');
  return null;
}

/** The lines of `before` and `after` with their common first and last lines as context, the rest removed and added. */
export function lineDiff(before: string, after: string): DiffLine[] {
  const a = before.split('\n');
  const b = after.split('\n');
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const same = (text: string): DiffLine => ({ kind: 'same', text });
  return [
    ...a.slice(Math.max(0, head - CONTEXT_LINES), head).map(same),
    ...a.slice(head, a.length - tail).map((text): DiffLine => ({ kind: 'del', text })),
    ...b.slice(head, b.length - tail).map((text): DiffLine => ({ kind: 'add', text })),
    ...a.slice(a.length - tail, a.length - tail + CONTEXT_LINES).map(same),
  ];
}

/** A patch in the apply_patch or unified format, its lines sorted by their first character. */
function patchLines(patch: string): DiffLine[] {
  return patch.split('\n').map((line): DiffLine => {
    if (line.startsWith('+') && !line.startsWith('+++')) return { kind: 'add', text: line.slice(1) };
    if (line.startsWith('-') && !line.startsWith('---')) return { kind: 'del', text: line.slice(1) };
    return { kind: 'same', text: line };
  });
}

function diffOf(input: Record<string, unknown> | null, raw: string): DiffLine[] | null {
  if (input === null) return /^\*\*\* Begin Patch/m.test(raw) ? patchLines(raw) : null;
  if (typeof input.old_string === 'string' && typeof input.new_string === 'string') return lineDiff(input.old_string, input.new_string);
  if (Array.isArray(input.edits)) {
    const edits = input.edits.filter(isRecord).filter((e) => typeof e.old_string === 'string' && typeof e.new_string === 'string');
    if (edits.length > 0) return edits.flatMap((e, i) => [...(i > 0 ? [{ kind: 'same' as const, text: '…' }] : []), ...lineDiff(e.old_string as string, e.new_string as string)]);
  }
  if (typeof input.content === 'string' && typeof input.file_path === 'string') return input.content.split('\n').map((text) => ({ kind: 'add', text }));
  const patch = Object.values(input).find((v): v is string => typeof v === 'string' && /^\*\*\* Begin Patch/m.test(v));
  return patch === undefined ? null : patchLines(patch);
}

function describe(name: string, raw: string): Pick<ToolCall, 'name' | 'target' | 'detail' | 'diff'> {
  const input = parseInput(raw);
  const diff = diffOf(input, raw);
  if (input === null) return { name, target: raw.split('\n')[0] ?? '', detail: diff || !raw.includes('\n') ? null : raw, diff };
  const key = TARGET_KEYS.find((k) => asText(input[k]) !== null) ?? Object.keys(input).find((k) => asText(input[k]) !== null);
  const full = key === undefined ? '' : asText(input[key])!;
  const target = full.split('\n')[0] ?? '';
  const rest = Object.fromEntries(Object.entries(input).filter(([k]) => k !== key && !(diff && ['old_string', 'new_string', 'edits', 'content', 'input', 'patch'].includes(k))));
  const parts = [
    ...(full.includes('\n') ? [full] : []),
    ...Object.entries(rest).map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`),
  ];
  return { name, target, detail: parts.length > 0 ? parts.join('\n') : null, diff };
}

/** The tool calls in a turn's context, in order, each with its result (matched by id, else by name, else in order). */
export function toolCalls(context: readonly ContextMessage[]): ToolCall[] {
  const calls: (ToolCall & { id: string | null })[] = [];
  for (const m of context) {
    if (m.type === 'tool_use') {
      const id = typeof m.tool_use_id === 'string' ? m.tool_use_id : null;
      calls.push({ ...describe(typeof m.name === 'string' ? m.name : 'tool', m.content), output: null, isError: false, id });
    } else if (m.type === 'tool_result') {
      const id = typeof m.tool_use_id === 'string' ? m.tool_use_id : null;
      const open = calls.filter((c) => c.output === null);
      const call = (id !== null ? open.find((c) => c.id === id) : undefined) ?? open.find((c) => c.name === m.name) ?? open[0];
      if (call) {
        call.output = m.content;
        call.isError = m.is_error === true;
      } else {
        calls.push({ name: typeof m.name === 'string' ? m.name : 'tool', target: '', detail: null, diff: null, output: m.content, isError: m.is_error === true, id });
      }
    }
  }
  return calls.map(({ id: _id, ...c }) => c);
}
