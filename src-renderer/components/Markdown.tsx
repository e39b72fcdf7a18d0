// Answers and prompts are markdown written by an agent or a person: rendered with react-markdown (CommonMark),
// remark-gfm (tables, task lists, strikethrough) and rehype-highlight (highlight.js classes on fenced code). Raw HTML
// is never rendered: skipHtml drops it and no rehype-raw is installed, so a captured `<script>` stays inert.
import ReactMarkdown from 'react-markdown';
import remarkGfm from 'remark-gfm';
import rehypeHighlight from 'rehype-highlight';

const REMARK = [remarkGfm];
// detect: false highlights only fences that name their language; guessing makes prose look like code.
const REHYPE: Parameters<typeof ReactMarkdown>[0]['rehypePlugins'] = [[rehypeHighlight, { detect: false }]];

export function Markdown(props: { text: string; className?: string }) {
  return (
    <div className={`md${props.className ? ` ${props.className}` : ''}`} dir="auto">
      <ReactMarkdown remarkPlugins={REMARK} rehypePlugins={REHYPE} skipHtml>
        {props.text}
      </ReactMarkdown>
    </div>
  );
}
