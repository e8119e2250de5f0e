#!/usr/bin/env node
// The `agentlet-resources` executable: runs one command with this process's arguments and environment.
import { main } from './main.js';

// SIGTERM and SIGINT stop `serve` cleanly; the one-shot commands keep Node's default (they end at once).
const stop = new AbortController();
if (process.argv[2] === 'serve') for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => stop.abort());

process.exitCode = await main(
  process.argv.slice(2),
  process.env,
  { out: (text) => process.stdout.write(text), err: (text) => process.stderr.write(text) },
  () => new Date(),
  { stop: stop.signal, isTty: process.stdout.isTTY === true },
);
