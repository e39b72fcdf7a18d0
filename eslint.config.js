import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import rein from './eslint-rules/layers.js';

export default tseslint.config(
  { ignores: ['node_modules/**', 'out/**', 'dist/**', 'e2e/node_modules/**', 'e2e/artifacts/**', 'bench/out/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.{ts,tsx,js,mjs}'],
    plugins: { rein },
    languageOptions: {
      globals: {
        process: 'readonly', console: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly',
        setInterval: 'readonly', clearInterval: 'readonly', URL: 'readonly', fetch: 'readonly', AbortController: 'readonly',
        structuredClone: 'readonly', performance: 'readonly', TextEncoder: 'readonly', TextDecoder: 'readonly',
        window: 'readonly', document: 'readonly', queueMicrotask: 'readonly', setImmediate: 'readonly',
      },
    },
    rules: {
      'rein/layers': 'error',
      'rein/store-sql': 'error',
      'rein/no-cycles': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-restricted-properties': ['error', { object: 'process', property: 'exit', message: 'process.exit only in src-main/cli and scripts' }],
    },
  },
  {
    files: ['src-main/cli/**', 'scripts/**', 'bin/**', 'bench/**', 'e2e/**', 'src-main/node/**/*-child.ts', 'src-main/node/**/worker*.ts'],
    rules: { 'no-restricted-properties': 'off' },
  },
);
