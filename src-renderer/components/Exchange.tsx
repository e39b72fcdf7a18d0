// A turn's prompt and answer as the card and the popup show them: rendered markdown, the full text fetched once
// (summaries carry only a 200-character preview), a drawer that opens a long answer to its last line, and the turn's
// tool calls under it.
import { useEffect, useState } from 'react';
import { useShallow } from 'zustand/shallow';
import type { TurnSummary } from '../../src-main/common/domain.ts';
import { useRein } from '../store/react.tsx';
import { selectFullTurn } from '../store/ratings.ts';
import { Markdown } from './Markdown.tsx';
import { ToolCalls } from './ToolCalls.tsx';

/** Longer than this (lines or characters) and the text starts folded, with a button that opens all of it. */
const FOLD_LINES = 14;
const FOLD_CHARS = 1200;
const isLong = (text: string) => text.length > FOLD_CHARS || text.split('\n').length > FOLD_LINES;

export function Exchange(props: { turn: TurnSummary; compact?: boolean }) {
  const { turn } = props;
  const { full, load } = useRein(useShallow((s) => ({ full: selectFullTurn(turn.id)(s), load: s.loadFullTurn })));
  const [open, setOpen] = useState(false);
  useEffect(() => {
    setOpen(false);
    void load(turn.id);
  }, [turn.id, load]);
  const prompt = full?.prompt ?? turn.promptPreview;
  const answer = full?.response ?? turn.responsePreview;
  const long = full !== null && (isLong(prompt) || isLong(answer));
  const folded = long && !open;
  return (
    <div className={`exchange${props.compact ? ' compact' : ''}${folded ? ' folded' : ''}`} data-testid="exchange">
      <p className="label">Prompt</p>
      <Markdown className="prompt" text={prompt || '(empty)'} />
      <p className="label">Answer</p>
      <Markdown className="answer" text={answer || '(empty)'} />
      {full === null && <p className="more">Loading the full text…</p>}
      {long && (
        <button type="button" className="link show-more" aria-expanded={open} onClick={() => setOpen(!open)}>
          {open ? 'Show less' : `Show more (${answer.split('\n').length} lines)`}
        </button>
      )}
      {full !== null && <ToolCalls context={full.context} />}
    </div>
  );
}
