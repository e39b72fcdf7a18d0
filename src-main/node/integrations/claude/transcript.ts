// The Claude Code transcript JSONL (unofficial; shared/SPECS.md "Transcript JSONL"), used only as a fallback and
// for the turn's tool calls. Each line has `type`, `isMeta`, `isSidechain` and `message.content` (a string or
// blocks: text, thinking, tool_use, tool_result). Tool results arrive as `type:"user"` lines, so the human prompt
// is the last user line whose content is a string or text blocks, with no tool_result, not isMeta (or a
// sidechain, except in a subagent's own transcript, where every line is one).
import { closeSync, readSync } from 'node:fs';
import path from 'node:path';
import type { ContextMessage } from '../../../common/domain.ts';
import { BadInputError } from '../../../common/errors.ts';
import { isRecord, truncate } from '../shared/text.ts';
import { FileReadError, openRegular } from '../../fs-read.ts';

/** Transcripts can grow to many MB; only the tail holds the current turn. */
export const TRANSCRIPT_TAIL_BYTES = 16 * 1024 * 1024;
export const TOOL_TEXT_MAX = 4_000;

export interface TranscriptTurn {
  prompt: string | null;
  /** The assistant text after the prompt (the last text block), when the hook did not carry it. */
  answer: string | null;
  context: ContextMessage[];
}

/** Read the tail of a transcript file as lines (the first, possibly cut, line is dropped when the tail is partial). */
export function readTranscriptLines(file: string): string[] {
  if (path.extname(file) !== '.jsonl') throw new BadInputError(`not a transcript (.jsonl) path: ${file}`, 'transcript_path');
  let opened: { fd: number; size: number };
  try {
    opened = openRegular(file);
  } catch (e) {
    if (e instanceof FileReadError) throw new BadInputError(`transcript is not a regular file: ${file}`, 'transcript_path');
    throw e;
  }
  const { fd, size } = opened;
  try {
    const start = Math.max(0, size - TRANSCRIPT_TAIL_BYTES);
    const buf = Buffer.alloc(size - start);
    let off = 0;
    while (off < buf.length) {
      const n = readSync(fd, buf, off, buf.length - off, start + off);
      if (n === 0) break;
      off += n;
    }
    const lines = buf.subarray(0, off).toString('utf8').split('\n');
    if (start > 0) lines.shift();
    return lines;
  } finally {
    closeSync(fd);
  }
}

type Block = Record<string, unknown>;

function blocksOf(content: unknown): Block[] | string | null {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.filter(isRecord);
  return null;
}

/** Text of a human prompt line, or null when the line is not one. */
function humanPrompt(entry: Record<string, unknown>, inSubagent: boolean): string | null {
  if (entry.type !== 'user' || entry.isMeta === true || entry.isCompactSummary === true) return null;
  if (entry.isSidechain === true && !inSubagent) return null;
  const msg = entry.message;
  if (!isRecord(msg)) return null;
  const blocks = blocksOf(msg.content);
  let text: string;
  if (typeof blocks === 'string') text = blocks;
  else if (blocks === null || blocks.length === 0) return null;
  else if (blocks.some((b) => b.type === 'tool_result')) return null;
  else if (blocks.every((b) => b.type === 'text' && typeof b.text === 'string')) text = blocks.map((b) => b.text as string).join('\n');
  else return null;
  // Local slash commands and their output are logged as plain user lines; they are not prompts to the model.
  if (/^\s*<(command-name|command-message|local-command-stdout|local-command-stderr)>/.test(text)) return null;
  return text;
}

function toolResultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .filter(isRecord)
      .map((b) => (b.type === 'text' && typeof b.text === 'string' ? b.text : `[${String(b.type)}]`))
      .join('\n');
  }
  return JSON.stringify(content ?? null);
}

/** Extract the newest turn: its human prompt, the assistant's final text, and its tool calls and results. */
export function parseTranscriptTurn(lines: string[], opts: { subagent?: boolean } = {}): TranscriptTurn {
  const entries: Record<string, unknown>[] = [];
  for (const line of lines) {
    if (line.trim() === '') continue;
    try {
      const v: unknown = JSON.parse(line);
      if (isRecord(v)) entries.push(v);
    } catch {
      // A line being written while we read, or a corrupt one: skip it, the rest of the turn still counts.
    }
  }
  let promptIdx = -1;
  let prompt: string | null = null;
  for (let i = entries.length - 1; i >= 0; i--) {
    const p = humanPrompt(entries[i]!, opts.subagent === true);
    if (p !== null) {
      promptIdx = i;
      prompt = p;
      break;
    }
  }
  const context: ContextMessage[] = [];
  const texts: string[] = [];
  for (let i = promptIdx + 1; i < entries.length; i++) {
    const e = entries[i]!;
    if (e.isSidechain === true && opts.subagent !== true) continue;
    const msg = e.message;
    if (!isRecord(msg)) continue;
    const blocks = blocksOf(msg.content);
    if (blocks === null || typeof blocks === 'string') {
      if (e.type === 'assistant' && typeof blocks === 'string') texts.push(blocks);
      continue;
    }
    for (const b of blocks) {
      if (e.type === 'assistant' && b.type === 'text' && typeof b.text === 'string') {
        texts.push(b.text);
        context.push({ role: 'assistant', content: b.text });
      } else if (e.type === 'assistant' && b.type === 'tool_use') {
        context.push({
          role: 'assistant',
          name: typeof b.name === 'string' ? b.name : 'tool',
          content: truncate(JSON.stringify(b.input ?? {}), TOOL_TEXT_MAX),
          tool_use_id: typeof b.id === 'string' ? b.id : undefined,
          type: 'tool_use',
        });
      } else if (e.type === 'user' && b.type === 'tool_result') {
        context.push({
          role: 'tool',
          content: truncate(toolResultText(b.content), TOOL_TEXT_MAX),
          tool_use_id: typeof b.tool_use_id === 'string' ? b.tool_use_id : undefined,
          is_error: b.is_error === true ? true : undefined,
          type: 'tool_result',
        });
      }
    }
  }
  const answer = texts.length > 0 ? texts[texts.length - 1]! : null;
  // The final text is the response itself, not context.
  if (answer !== null) {
    const last = context.findLastIndex((m) => m.role === 'assistant' && m.type === undefined && m.content === answer);
    if (last >= 0) context.splice(last, 1);
  }
  return { prompt, answer, context: context.map(dropUndefined) };
}

function dropUndefined(m: ContextMessage): ContextMessage {
  const out: ContextMessage = { role: m.role, content: m.content };
  for (const [k, v] of Object.entries(m)) if (v !== undefined) out[k] = v;
  return out;
}

/** The line Claude Code writes into its transcript when the user interrupts a turn (Esc), with or without "for tool use". */
export const INTERRUPT_MARK = /^\[Request interrupted by user[^\]]*\]/;

/**
 * The turn the user interrupted, when the transcript's newest human line (before `current`, the prompt being
 * submitted, if the client already wrote it) is Claude Code's interrupt mark: the prompt before the mark, the
 * answer's text so far and its tool calls, and the mark itself. Null otherwise, or when nothing was answered yet.
 * Claude Code runs no Stop hook for an interrupted turn, so this is where it is seen.
 */
export function interruptedTurn(lines: string[], current: string | null): (TranscriptTurn & { mark: string }) | null {
  const entries: { line: number; prompt: string | null }[] = [];
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    try {
      const v: unknown = JSON.parse(line);
      if (isRecord(v)) entries.push({ line: i, prompt: humanPrompt(v, false) });
    } catch {
      // a line being written: skip it
    }
  });
  const humans = entries.filter((e) => e.prompt !== null);
  let last = humans.at(-1);
  if (last !== undefined && current !== null && last.prompt!.trim() === current.trim()) last = humans.at(-2);
  if (last === undefined) return null;
  const mark = INTERRUPT_MARK.exec(last.prompt!.trim());
  if (mark === null) return null;
  const turn = parseTranscriptTurn(lines.slice(0, last.line));
  if (turn.prompt === null || INTERRUPT_MARK.test(turn.prompt.trim()) || turn.answer === null || turn.answer.trim() === '') return null;
  return { ...turn, mark: mark[0] };
}
