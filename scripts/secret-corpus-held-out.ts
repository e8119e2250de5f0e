// The held-out corpus (test/fixtures/secret-corpus, built apart from the rules; the rules' own corpus is
// test/fixtures/secrets, measured by scripts/secret-corpus.ts). Prints SecretScanner's recall per credential family, its false-positive rate on skill documents and agent
// instructions (with the negatives it flagged) and its worst-case scan time on adversarial 1 MiB inputs
// (median of 3 runs each, a run stopped after LIMIT seconds, default 60).
//   npm run secrets:held-out [-- --missed] [-- --no-timing] [-- --limit <seconds>]
import { SecretScanner } from '../src/secrets/secret-scanner.js';
import { measure, report, scanTimes, timingLine } from './secret-corpus/measure.js';

const argv = process.argv.slice(2);
const limitAt = argv.indexOf('--limit');
const limitMs = limitAt >= 0 ? Number(argv[limitAt + 1]) * 1000 : 60_000;

console.log(report(await measure(new SecretScanner()), { missed: argv.includes('--missed') }));
if (!argv.includes('--no-timing')) {
  console.log('\nscan time of 1 MiB (median of 3)');
  await scanTimes({ limitMs, onTiming: (t) => console.log(timingLine(t, limitMs)) });
}
