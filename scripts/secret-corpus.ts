// Prints the secret scan's recall per credential family (and on gitleaks' rule tests and the agent-host
// formats apart), its false-positive rate on paragraphs and on whole files of real public skill folders in
// test/fixtures/secrets/, and its slowest time on 1 MiB of adversarial text: `npx tsx scripts/secret-corpus.ts`.
import { measureCorpus, worstCase } from '../test/helpers/secret-corpus.js';

const figures = await measureCorpus();
console.log('family              recall');
for (const { family, found, total } of figures.recall)
  console.log(`${family.padEnd(19)} ${found}/${total} (${((100 * found) / total).toFixed(1)} %)`);
const { positives, negatives, bySource, skillFiles } = figures;
const percent = (n: number, total: number, digits = 1) => `${n}/${total} (${((100 * n) / total).toFixed(digits)} %)`;
console.log(`all positives       ${percent(positives.found, positives.total)}`);
console.log(`gitleaks rule tests ${percent(bySource.gitleaks.found, bySource.gitleaks.total)}`);
console.log(`agent-host formats  ${percent(bySource.agentFormats.found, bySource.agentFormats.total)}`);
console.log(`false positives     ${percent(negatives.refused, negatives.total, 2)} of paragraphs and placeholders`);
console.log(`false positives     ${percent(skillFiles.refused, skillFiles.total, 2)} of whole skill files`);
for (const missed of figures.missed) console.log(`missed: ${missed}`);
for (const fp of figures.falsePositives) console.log(`refused (${fp.rule}): ${fp.source}: ${fp.excerpt}`);
const { ordinaryMs, worst } = await worstCase();
console.log(
  `1 MiB of ordinary text: ${ordinaryMs.toFixed(0)} ms; slowest 1 MiB adversarial text (${worst.what}): ${worst.ms.toFixed(0)} ms`,
);
