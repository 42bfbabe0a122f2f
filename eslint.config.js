// ESLint for the whole tree: the recommended JavaScript and typescript-eslint rules (syntax-based,
// so a lint of every file takes seconds, not a type-check), plus the few rules the code relies on.
import js from '@eslint/js'
import tseslint from 'typescript-eslint'

/** How long a function may be: lines of code, blank and comment lines not counted. */
export const FUNCTION_LINES = { max: 80, skipBlankLines: true, skipComments: true, IIFEs: true }

/**
 * The files that still hold functions over that length, each with how many. The list only
 * shrinks: test/lint-limits.test.ts fails when a file holds fewer than listed (lower the number, or
 * drop the file) and the lint fails on a long function anywhere else. Split a function, never add
 * a file here.
 */
export const LONG_FUNCTIONS = {
  'plugins/installs/install.ts': 1,
  'src/cli/context.ts': 1,
  'src/cli/dev.ts': 1,
  'src/kernel/context.ts': 1,
}

export default tseslint.config(
  { ignores: ['node_modules/', '**/fixtures/', 'dist/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        queueMicrotask: 'readonly',
        performance: 'readonly',
        structuredClone: 'readonly',
        TextEncoder: 'readonly',
        TextDecoder: 'readonly',
        fetch: 'readonly',
        Response: 'readonly',
        Request: 'readonly',
        Headers: 'readonly',
        DOMException: 'readonly',
        EventTarget: 'readonly',
        Event: 'readonly',
      },
    },
    rules: {
      // `catch {}` and `() => {}` are used on purpose where an error has nowhere useful to go
      'no-empty': ['error', { allowEmptyCatch: true }],
      '@typescript-eslint/no-empty-function': 'off',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      // interfaces that plugins extend by declaration merging start empty
      '@typescript-eslint/no-empty-object-type': ['error', { allowInterfaces: 'always' }],
      // tests match aligned terminal output, where a run of spaces is what is being checked
      'no-regex-spaces': 'off',
    },
  },
  {
    files: ['src/**', 'plugins/**', 'bin/**'],
    rules: { 'max-lines-per-function': ['error', FUNCTION_LINES] },
  },
  ...(Object.keys(LONG_FUNCTIONS).length
    ? [{ files: Object.keys(LONG_FUNCTIONS), rules: { 'max-lines-per-function': 'off' } }]
    : []),
  {
    // tests and benchmarks reach into results and fakes whose shapes they check themselves
    files: ['test/**', 'bench/**', '**/*.test.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
)
