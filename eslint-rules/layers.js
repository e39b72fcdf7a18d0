// Runtime layering, enforced at error (house style rule 1 and 2).
//   common        pure TS: imports only common and packages listed as 'common'
//   node          common + node + Node builtins + 'node' packages
//   electron-main common + node + electron + 'node' packages
//   cli           common + node + Node builtins + 'node' packages (never electron)
//   preload       common + electron
//   renderer      `import type` from common only, plus 'renderer' packages
// Every bare package import must be listed in PACKAGES with its runtime; an unlisted one is an error.
// A relative import must land in one of these layers (an import into bench/, scripts/ or anywhere else is an error).
// Inside src-main/node the rooms are ordered (NODE_ROOMS, lowest first): a room imports only rooms on lower levels,
// never its own level's neighbours or anything above. Tests and test-utils may reach up (a training test opens a core).
import path from 'node:path';
import { builtinModules } from 'node:module';
import { storeSqlRule } from './store-sql.js';
import { cyclesRule } from './cycles.js';

export const PACKAGES = {
  zod: 'common',
  '@huggingface/jinja': 'common',
  'better-sqlite3': 'node',
  'onnxruntime-node': 'node',
  'onnx-proto': 'node',
  protobufjs: 'node',
  '@huggingface/tokenizers': 'node',
  '@huggingface/gguf': 'node',
  'node-llama-cpp': 'node',
  'smol-toml': 'node',
  react: 'renderer',
  'react-dom': 'renderer',
  zustand: 'renderer',
  recharts: 'renderer',
  'react-markdown': 'renderer',
  'remark-gfm': 'renderer',
  'rehype-highlight': 'renderer',
  electron: 'electron',
  // tooling and tests
  vitest: 'dev',
  'vitest/config': 'dev',
  'playwright-core': 'dev',
  'electron-vite': 'dev',
  '@vitejs/plugin-react': 'dev',
  vite: 'dev',
  'axe-core': 'dev',
};

/**
 * The rooms of src-main/node, lowest first: a folder, or a file directly in node/ by its name without extension.
 * A room not listed here is an error, so a new folder takes a place in the order when it is made.
 */
export const NODE_ROOMS = [
  ['home', 'pid', 'fs-atomic', 'fs-read', 'resources'], // the Rein home and small file helpers
  ['core-lock'], // one running core per home (a pid lock)
  ['store', 'engine'], // SQLite (all SQL), and the training engine (ONNX graphs, GGUF, tokenizers)
  ['model-files'], // a base model's folder and the adapter versions on disk
  ['training'], // rounds, the scheduler and its worker
  ['core'], // the verbs: one call, typed events (core.ts), and the Core contract (types.ts)
  ['integrations', 'capture-server'], // agents' hook handlers; the capture HTTP server
  ['serving', 'install'], // llama.cpp, the capture proxy, publishing; the agents' installers
  ['demo'], // the small LM and the learning loop behind `rein demo`
  ['system'], // the setup wizard's verbs (agents, hardware, model discovery)
  ['compose'], // the composition root: core + wizard
  ['headless', 'gym', 'client'], // `rein serve` / the app's start-up; the RL gym; the CLI's HTTP client
];
const ROOM_LEVEL = new Map(NODE_ROOMS.flatMap((rooms, level) => rooms.map((r) => [r, level])));

/** The room of a file under src-main/node, or null outside it. */
export function nodeRoom(file) {
  const m = /(?:^|\/)src-main\/node\/(.+)$/.exec(file.split(path.sep).join('/'));
  if (!m) return null;
  const parts = m[1].split('/');
  return parts.length === 1 ? parts[0].replace(/\.[^.]+$/, '') : parts[0];
}

/** Why an import from room `from` into room `to` runs against the order, or null when it may. */
export function roomArrowProblem(from, to) {
  if (from === to) return null;
  if (!ROOM_LEVEL.has(from)) return `node/${from} has no place in NODE_ROOMS (eslint-rules/layers.js)`;
  if (!ROOM_LEVEL.has(to)) return `node/${to} has no place in NODE_ROOMS (eslint-rules/layers.js)`;
  const a = ROOM_LEVEL.get(from);
  const b = ROOM_LEVEL.get(to);
  if (b < a) return null;
  return b === a ? `node/${from} may not import its neighbour node/${to} (same level in NODE_ROOMS)` : `node/${from} may not import node/${to}, which sits above it in NODE_ROOMS`;
}

const BUILTINS = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);

function layerOf(file) {
  const rel = file.split(path.sep).join('/');
  if (/(^|\/)src-main\/common\//.test(rel)) return 'common';
  if (/(^|\/)src-main\/node\//.test(rel)) return 'node';
  if (/(^|\/)src-main\/electron-main\//.test(rel)) return 'electron-main';
  if (/(^|\/)src-main\/cli\//.test(rel)) return 'cli';
  if (/(^|\/)src-preload\//.test(rel)) return 'preload';
  if (/(^|\/)src-renderer\//.test(rel)) return 'renderer';
  return null;
}

function packageName(spec) {
  if (spec.startsWith('@')) return spec.split('/').slice(0, 2).join('/');
  return spec.split('/')[0];
}

const ALLOWED_LAYERS = {
  common: ['common'],
  node: ['common', 'node'],
  'electron-main': ['common', 'node', 'electron-main'],
  cli: ['common', 'node', 'cli'],
  preload: ['common', 'preload'],
  renderer: ['renderer', 'common'],
};
const ALLOWED_PACKAGES = {
  common: ['common'],
  node: ['common', 'node'],
  'electron-main': ['common', 'node', 'electron'],
  cli: ['common', 'node'],
  preload: ['common', 'electron'],
  renderer: ['renderer'],
};

const isTestFile = (f) => /\.(test|spec)\.tsx?$/.test(f) || /\/test-utils?\//.test(f.split(path.sep).join('/'));

export const layersRule = {
  meta: {
    type: 'problem',
    docs: { description: 'Enforce the runtime layers of src-main, src-preload and src-renderer.' },
    schema: [],
  },
  create(context) {
    const file = context.filename;
    const layer = layerOf(file);
    if (!layer) return {};
    const test = isTestFile(file);
    function check(node, spec, typeOnly) {
      if (typeof spec !== 'string') return;
      if (spec.startsWith('.')) {
        const resolved = path.resolve(path.dirname(file), spec);
        const target = layerOf(resolved);
        // The project's own package.json (its version) is data every runtime but the renderer and preload may read.
        if (!target && path.basename(resolved) === 'package.json' && layer !== 'renderer' && layer !== 'preload') return;
        if (!target) {
          context.report({ node, message: `${layer} may not import '${spec}': it lies outside src-main, src-preload and src-renderer` });
          return;
        }
        if (!ALLOWED_LAYERS[layer].includes(target)) {
          context.report({ node, message: `${layer} may not import from ${target} ('${spec}')` });
        } else if (layer === 'renderer' && target === 'common' && !typeOnly) {
          context.report({ node, message: `the renderer may import only types from common ('${spec}'): use 'import type'` });
        } else if (layer === 'node' && target === 'node' && !test) {
          const problem = roomArrowProblem(nodeRoom(file), nodeRoom(resolved));
          if (problem) context.report({ node, message: `${problem} ('${spec}')` });
        }
        return;
      }
      if (BUILTINS.has(spec)) {
        if (layer === 'common' || layer === 'renderer') {
          context.report({ node, message: `${layer} may not import the Node builtin '${spec}'` });
        }
        return;
      }
      const pkg = PACKAGES[spec] !== undefined ? spec : packageName(spec);
      const runtime = PACKAGES[pkg];
      if (runtime === undefined) {
        context.report({ node, message: `package '${pkg}' is not classified by runtime in eslint-rules/layers.js` });
        return;
      }
      if (runtime === 'dev') {
        if (!test) context.report({ node, message: `dev-only package '${pkg}' imported outside a test` });
        return;
      }
      if (typeOnly && runtime !== 'electron') return;
      if (!ALLOWED_PACKAGES[layer].includes(runtime)) {
        context.report({ node, message: `${layer} may not import the ${runtime} package '${pkg}'` });
      }
    }
    return {
      ImportDeclaration(node) {
        const typeOnly = node.importKind === 'type' || (node.specifiers.length > 0 && node.specifiers.every((s) => s.importKind === 'type'));
        check(node, node.source.value, typeOnly);
      },
      ExportNamedDeclaration(node) {
        if (node.source) check(node, node.source.value, node.exportKind === 'type');
      },
      ExportAllDeclaration(node) {
        check(node, node.source.value, node.exportKind === 'type');
      },
      ImportExpression(node) {
        if (node.source.type === 'Literal') check(node, node.source.value, false);
      },
      CallExpression(node) {
        if (node.callee.type === 'Identifier' && node.callee.name === 'require' && node.arguments[0]?.type === 'Literal') {
          check(node, node.arguments[0].value, false);
        }
      },
    };
  },
};

export default { rules: { layers: layersRule, 'store-sql': storeSqlRule, 'no-cycles': cyclesRule } };
