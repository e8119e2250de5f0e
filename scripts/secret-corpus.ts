// Prints the secret scan's recall per credential family and false-positive rate on the corpus in
// test/fixtures/secrets/, and its slowest time on 1 MiB of adversarial text: `npx tsx scripts/secret-corpus.ts`.
import { measureCorpus, worstCase } from '../test/helpers/secret-corpus.js';

const figures = await measureCorpus();
console.log('family              recall');
for (const { family, found, total } of figures.recall)
  console.log(`${family.padEnd(19)} ${found}/${total} (${((100 * found) / total).toFixed(1)} %)`);
const { positives, negatives } = figures;
console.log(`all positives       ${positives.found}/${positives.total} (${((100 * positives.found) / positives.total).toFixed(1)} %)`);
console.log(`false positives     ${negatives.refused}/${negatives.total} (${((100 * negatives.refused) / negatives.total).toFixed(2)} %)`);
for (const missed of figures.missed) console.log(`missed: ${missed}`);
for (const fp of figures.falsePositives) console.log(`refused (${fp.rule}): ${fp.source}: ${fp.excerpt}`);
const { ordinaryMs, worst } = await worstCase();
console.log(
  `1 MiB of ordinary text: ${ordinaryMs.toFixed(0)} ms; slowest 1 MiB adversarial text (${worst.what}): ${worst.ms.toFixed(0)} ms`,
);
