// eslint-plugin-security ships no types; CheckCode only hands the plugin to ESLint's Linter and lists its rules.
declare module 'eslint-plugin-security' {
  import type { ESLint } from 'eslint';

  const plugin: ESLint.Plugin & { readonly rules: Readonly<Record<string, unknown>> };
  export = plugin;
}
