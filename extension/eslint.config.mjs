// ESLint for the front-end code. `make lint-js` (part of `make check`) runs it from the repository
// root with -c: the extension's TypeScript with typescript-eslint's type-aware rules, and the
// memory browser's plain ES modules (api/ui/). No function over 80 lines, as in the Python code.
import js from "@eslint/js";
import globals from "globals";
import tseslint from "typescript-eslint";

const shared = {
  "max-lines-per-function": ["error", { max: 80, skipBlankLines: true, skipComments: true }],
  eqeqeq: ["error", "always"],
  "no-var": "error",
  "prefer-const": "error",
  "no-throw-literal": "error",
};

export default tseslint.config(
  { ignores: ["extension/out/**", "extension/node_modules/**", "extension/e2e/**", "extension/eslint.config.mjs"] },
  {
    files: ["extension/src/**/*.ts", "extension/test/**/*.ts"],
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { project: "extension/tsconfig.json", tsconfigRootDir: import.meta.dirname + "/.." },
      globals: globals.node,
    },
    rules: {
      ...shared,
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
      "@typescript-eslint/no-shadow": "error",
      "@typescript-eslint/switch-exhaustiveness-check": "error",
      // node:test's test(), describe() and it() return promises the runner awaits itself.
      "@typescript-eslint/no-floating-promises": [
        "error",
        { allowForKnownSafeCalls: [{ from: "package", package: "node:test", name: ["test", "describe", "it"] }] },
      ],
      // Bridge replies are JSON; String(value) is how they are shown, by design.
      "@typescript-eslint/no-base-to-string": "off",
      "@typescript-eslint/restrict-template-expressions": "off",
      // A fake often implements an async interface without awaiting anything.
      "@typescript-eslint/require-await": "off",
    },
  },
  {
    // Tests read JSON they wrote themselves (JSON.parse is `any`).
    files: ["extension/test/**/*.ts"],
    rules: {
      "@typescript-eslint/no-unsafe-assignment": "off",
      "@typescript-eslint/no-unsafe-member-access": "off",
      "@typescript-eslint/no-unsafe-argument": "off",
      "@typescript-eslint/no-unsafe-call": "off",
    },
  },
  {
    files: ["api/ui/**/*.js"],
    extends: [js.configs.recommended],
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: globals.browser },
    rules: shared,
  },
);
