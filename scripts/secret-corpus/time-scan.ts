// Worker thread: scans one text once (after a warm-up scan that loads secretlint) and posts the time taken
// and the rule that matched (a scan that finds something ends early),
// so that a scan which runs away can be stopped from the main thread.
import { parentPort, workerData } from 'node:worker_threads';
import { SecretScanner } from '../../src/secrets/secret-scanner.js';

const scanner = new SecretScanner();
await scanner.scan([['/instructions', 'warm-up']]);
const started = performance.now();
const findings = await scanner.scan([['/instructions', (workerData as { text: string }).text]]);
parentPort!.postMessage({ ms: performance.now() - started, rule: findings[0]?.rule });
