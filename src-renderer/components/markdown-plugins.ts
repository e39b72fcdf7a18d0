// Two remark plugins that make agent text show as it was written. Agents write for a terminal, where literal HTML
// is text and a single newline is a new line; CommonMark would instead treat `<img …>` as markup and fold a single
// newline into a space.
// - literalHtml: each raw HTML node (mdast `html`, block or inline: CommonMark 4.6 and 6.6) becomes text, so React
//   escapes it. Nothing is parsed as markup, nothing is dropped. A block of HTML becomes a paragraph of its text.
// - softBreaks: each newline inside text becomes a line break, as remark-breaks does (and GitHub's comments do).
// Both run on the mdast before remark-rehype, so code (its own `code` / `inlineCode` nodes) is left untouched.

interface MdNode {
  type: string;
  value?: string;
  children?: MdNode[];
}

function isBlockParent(node: MdNode): boolean {
  return node.type === 'root' || node.type === 'blockquote' || node.type === 'listItem' || node.type === 'footnoteDefinition';
}

function walk(node: MdNode, visit: (parent: MdNode, children: MdNode[]) => MdNode[]): void {
  if (!node.children) return;
  node.children = visit(node, node.children);
  for (const child of node.children) walk(child, visit);
}

export function literalHtml() {
  return (tree: MdNode) =>
    walk(tree, (parent, children) =>
      children.map((c) => {
        if (c.type !== 'html') return c;
        const text: MdNode = { type: 'text', value: c.value ?? '' };
        return isBlockParent(parent) ? { type: 'paragraph', children: [text] } : text;
      }),
    );
}

export function softBreaks() {
  return (tree: MdNode) =>
    walk(tree, (_parent, children) =>
      children.flatMap((c) => {
        if (c.type !== 'text' || !c.value?.includes('\n')) return [c];
        const out: MdNode[] = [];
        c.value.split(/\r?\n/).forEach((part, i) => {
          if (i > 0) out.push({ type: 'break' });
          if (part !== '') out.push({ type: 'text', value: part });
        });
        return out;
      }),
    );
}
