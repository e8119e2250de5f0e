// tap's `--import` for every test file (package.json "tap"."node-arg"): registers tsx only when the file tap
// runs is TypeScript (`npx tap test/<area>/<file>.test.ts`, `npm run test:quick`). `npm test` runs the compiled
// tests in dist/test, which then load without tsx's module hooks (about half a second per file).
if (process.argv[1]?.endsWith('.ts')) await import('tsx');
