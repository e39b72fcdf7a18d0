// Only node/store touches SQL (house style; issue #20 item 1): `.prepare(` and `.stmt(` are refused in production
// code anywhere else under src-main, so a table's statements, and rules such as "one active version", live in one
// place (store/runs.ts, store/adapters.ts, store/rounds.ts, store/store.ts). Tests may read the database directly.
import path from 'node:path';

const isTestFile = (f) => /\.(test|spec)\.tsx?$/.test(f) || /\/test-utils?\//.test(f);

export const storeSqlRule = {
  meta: {
    type: 'problem',
    docs: { description: 'Refuse SQL (prepare/stmt) outside src-main/node/store.' },
    schema: [],
  },
  create(context) {
    const file = context.filename.split(path.sep).join('/');
    if (!file.includes('/src-main/') || file.includes('/src-main/node/store/') || isTestFile(file)) return {};
    return {
      CallExpression(node) {
        const callee = node.callee;
        if (callee.type !== 'MemberExpression' || callee.computed || callee.property.type !== 'Identifier') return;
        const name = callee.property.name;
        if (name !== 'prepare' && name !== 'stmt') return;
        context.report({ node, message: `SQL outside the store ('.${name}('): add a named method to src-main/node/store instead` });
      },
    };
  },
};
