// Lint: typescript-eslint's recommended rules, and the process boundaries the folder tree names
// (extension/README.md): only editor code imports 'vscode'; nothing that runs as root or in the CLI
// imports editor code; the pure layers (protocol/, model/, webview models) do no I/O; no cycles.
import tseslint from 'typescript-eslint';
import importPlugin from 'eslint-plugin-import';

// Node built-ins that do I/O or start processes: the pure layers import none of them.
const ioModules = ['fs', 'child_process', 'net', 'http', 'https', 'os', 'worker_threads', 'dgram', 'tls', 'cluster', 'readline']
  .flatMap((m) => [m, `node:${m}`, `${m}/*`, `node:${m}/*`]);

/** no-restricted-imports for a folder: `groups` are glob patterns of forbidden specifiers. */
function forbid(files, groups, why, paths = []) {
  return {
    files,
    rules: {
      'no-restricted-imports': ['error', { paths: paths.map((name) => ({ name, message: why })), patterns: [{ group: groups, message: why }] }],
    },
  };
}

const editorCode = ['**/editor/**', '**/extension/extension'];
const pureForbidden = [...editorCode, '**/helper/**', '**/runner/**', '**/tracers/**', '**/sys/**', '**/privilege/**', '**/authoring/**', '**/cli/**', '**/lsp/**', '**/agent/**', ...ioModules];
const rootSide = ['extension/helper/**', 'extension/runner/**', 'extension/tracers/**', 'extension/sys/**', 'extension/privilege/**', 'extension/authoring/**', 'extension/cli/**', 'extension/lsp/**', 'extension/agent/**'];

export default tseslint.config(
  { ignores: ['dist/**', 'build/**', 'native/build/**', 'node_modules/**', 'test-artifacts/**', 'test/fixtures/**', '**/*.js', '**/*.mjs', '**/*.cjs'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    plugins: { import: importPlugin },
    settings: {
      'import/extensions': ['.ts', '.d.ts'],
      'import/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import/resolver': { node: { extensions: ['.ts', '.d.ts', '.js'] } },
    },
    rules: {
      'import/no-cycle': ['error', { ignoreExternal: true }],
      // A panel's send() closure reads the panel variable before it is assigned (messages queue until then).
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  forbid(['extension/runner/**'], [...editorCode], 'runs outside the editor (as root): it may not import editor code', ['vscode']),
  // The CLI starts the fleet agent (cli/commands/agent.ts) but never runs user code as root.
  forbid(['extension/cli/**'], [...editorCode, '**/runner/**'], 'the CLI imports no editor code and never runs user code as root (that is extension/runner/)', ['vscode']),
  // Everything else outside the editor: no editor code, no runner (user code as root is its own
  // authenticated process), and the fleet agent is a service of its own, imported only by its CLI command.
  forbid(
    rootSide.filter((f) => f !== 'extension/cli/**' && f !== 'extension/runner/**'),
    [...editorCode, '**/runner/**', '**/extension/agent/**', '../agent/*', '../../agent/*'],
    'runs outside the editor: no editor code, no extension/runner/ (user code as root), and extension/agent/ only from cli/commands/agent.ts',
    ['vscode'],
  ),
  // Pure layers, and their order: protocol/ (shapes, the tracer catalog) < model/ < webview/. An
  // arrow back up (protocol importing a model, a model importing a view's messages) is an error.
  forbid(['extension/protocol/**'], [...pureForbidden, '**/model/**', '**/webview/**'], 'protocol/ is pure and the bottom layer: no I/O, no process-specific code, no model/ or webview/ import (move the shape into protocol/)', ['vscode', 'zlib', 'node:zlib']),
  forbid(['extension/model/**'], [...pureForbidden, '**/webview/**'], 'model/ is pure and below the views: no I/O, no process-specific code, no webview/ import (move the shape into model/ or protocol/)', ['vscode', 'zlib', 'node:zlib']),
  forbid(['webview/**'], ['**/extension/editor/**', '**/extension/helper/**', '**/extension/runner/**', '**/extension/tracers/**', '**/extension/sys/**', '**/extension/privilege/**', '**/extension/authoring/**', '**/extension/cli/**', '**/extension/lsp/**', '**/extension/agent/**', ...ioModules], 'webviews run in the browser: they import protocol/, model/ and webview/ only', ['vscode']),
  {
    // Tests and benchmarks drive every layer; only the cycle and recommended rules apply.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
