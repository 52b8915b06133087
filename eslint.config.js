import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'charts/', 'crds/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['*.js', 'bin/*.js', 'scripts/*.js'] },
        tsconfigRootDir: import.meta.dirname,
      },
      globals: {
        process: 'readonly',
        console: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/only-throw-error': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    // Script modules the pages load in the browser (lib/web/assets, <role>/web/assets): plain
    // JavaScript with browser globals, outside the TypeScript project.
    files: ['**/web/assets/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      sourceType: 'module',
      parserOptions: { projectService: false, project: false, program: null },
      globals: Object.fromEntries(
        [
          'document',
          'window',
          'location',
          'history',
          'fetch',
          'EventSource',
          'FormData',
          'URLSearchParams',
          'Node',
          'HTMLElement',
          'setInterval',
          'clearInterval',
          'navigator',
          'DOMParser',
          'CSS',
        ].map((name) => [name, 'readonly']),
      ),
    },
  },
);
