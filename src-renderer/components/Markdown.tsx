// The one renderer for text an agent or a person wrote (answers, prompts, corrections, tool-call notes), on every
// screen: react-markdown (CommonMark), remark-gfm (tables, task lists, strikethrough) and rehype-highlight
// (highlight.js classes on fenced code). Raw HTML shows as the text it is (literalHtml): never rendered (no rehype-raw
// is installed) and never dropped, so a captured `<script>` is visible and inert. A single newline stays a line break
// (softBreaks), as in the terminal the agent wrote for.
import ReactMarkdown from 'react-markdown';
import remarkGfm from 'remark-gfm';
import rehypeHighlight from 'rehype-highlight';
import { literalHtml, softBreaks } from './markdown-plugins.ts';

const REMARK: Parameters<typeof ReactMarkdown>[0]['remarkPlugins'] = [remarkGfm, literalHtml, softBreaks];
// detect: false highlights only fences that name their language; guessing makes prose look like code.
const REHYPE: Parameters<typeof ReactMarkdown>[0]['rehypePlugins'] = [[rehypeHighlight, { detect: false }]];

export function Markdown(props: { text: string; className?: string }) {
  return (
    <div className={`md${props.className ? ` ${props.className}` : ''}`} dir="auto">
      <ReactMarkdown remarkPlugins={REMARK} rehypePlugins={REHYPE}>
        {props.text}
      </ReactMarkdown>
    </div>
  );
}
