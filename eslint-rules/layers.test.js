// The layer rule itself, run through ESLint's RuleTester with the TypeScript parser.
import { RuleTester } from 'eslint';
import tseslint from 'typescript-eslint';
import { afterAll, describe, it } from 'vitest';
import { layersRule } from './layers.js';

RuleTester.afterAll = afterAll;
RuleTester.describe = describe;
RuleTester.it = it;
RuleTester.itOnly = it.only;

const tester = new RuleTester({ languageOptions: { parser: tseslint.parser, ecmaVersion: 2024, sourceType: 'module' } });
const at = (layerPath) => `/repo/${layerPath}`;

tester.run('rein/layers', layersRule, {
  valid: [
    { filename: at('src-main/common/api.ts'), code: "import { z } from 'zod'; import type { X } from './domain.ts';" },
    { filename: at('src-main/node/store/db.ts'), code: "import Database from 'better-sqlite3'; import { x } from '../../common/api.ts'; import fs from 'node:fs';" },
    { filename: at('src-main/cli/main.ts'), code: "import { createCore } from '../node/core/core.ts';" },
    { filename: at('src-main/electron-main/index.ts'), code: "import { app } from 'electron'; import { createCore } from '../node/core/core.ts';" },
    { filename: at('src-preload/index.ts'), code: "import { contextBridge } from 'electron'; import { VERB_NAMES } from '../src-main/common/api.ts';" },
    { filename: at('src-renderer/App.tsx'), code: "import type { Status } from '../src-main/common/domain.ts'; import { create } from 'zustand';" },
    { filename: at('src-main/node/store/store.test.ts'), code: "import { it } from 'vitest';" },
    { filename: at('src-main/node/training/round.ts'), code: "import { x } from '../store/store.ts'; import { y } from '../model-files/base-model.ts'; import { z } from '../home.ts';" },
    { filename: at('src-main/node/headless.ts'), code: "import { c } from './compose.ts'; import { s } from './capture-server/server.ts';" },
    { filename: at('src-main/node/training/round.test.ts'), code: "import { createCore } from '../core/core.ts';" },
    { filename: at('src-main/node/core/core.ts'), code: "import pkg from '../../../package.json' with { type: 'json' };" },
  ],
  invalid: [
    { filename: at('src-main/common/x.ts'), code: "import fs from 'node:fs';", errors: [{ message: /common may not import the Node builtin/ }] },
    { filename: at('src-main/common/x.ts'), code: "import { y } from '../node/home.ts';", errors: [{ message: /common may not import from node/ }] },
    { filename: at('src-main/node/x.ts'), code: "import { app } from 'electron';", errors: [{ message: /node may not import the electron package/ }] },
    { filename: at('src-main/cli/x.ts'), code: "import { app } from 'electron';", errors: [{ message: /cli may not import the electron package/ }] },
    { filename: at('src-main/cli/x.ts'), code: "import { w } from '../electron-main/index.ts';", errors: [{ message: /cli may not import from electron-main/ }] },
    { filename: at('src-renderer/x.ts'), code: "import { VERBS } from '../src-main/common/api.ts';", errors: [{ message: /only types from common/ }] },
    { filename: at('src-renderer/x.ts'), code: "import Database from 'better-sqlite3';", errors: [{ message: /renderer may not import the node package/ }] },
    { filename: at('src-main/node/x.ts'), code: "import left from 'left-pad';", errors: [{ message: /not classified by runtime/ }] },
    { filename: at('src-main/node/x.ts'), code: "import { it } from 'vitest';", errors: [{ message: /dev-only package/ }] },
    { filename: at('src-main/node/x.ts'), code: "const e = require('electron');", errors: [{ message: /node may not import the electron package/ }] },
    { filename: at('src-main/node/core/core.ts'), code: "import { s } from '../system/index.ts';", errors: [{ message: /node\/core may not import node\/system, which sits above it/ }] },
    { filename: at('src-main/node/training/data.ts'), code: "import { C } from '../integrations/claude/handler.ts';", errors: [{ message: /node\/training may not import node\/integrations/ }] },
    { filename: at('src-main/node/serving/proxy.ts'), code: "import { i } from '../install/installer.ts';", errors: [{ message: /may not import its neighbour node\/install/ }] },
    { filename: at('src-main/node/store/store.ts'), code: "import { n } from '../newroom/x.ts';", errors: [{ message: /node\/newroom has no place in NODE_ROOMS/ }] },
    { filename: at('src-main/node/store/store.ts'), code: "import { b } from '../../../bench/harness.ts';", errors: [{ message: /lies outside src-main/ }] },
    { filename: at('src-renderer/x.ts'), code: "import pkg from '../package.json';", errors: [{ message: /lies outside src-main/ }] },
  ],
});
