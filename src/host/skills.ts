// The host skills an agent reads over RFS: `GET $HUABU_RFS_URL/skill` (the index) and
// `GET $HUABU_RFS_URL/skill/<name>`. Written for this service; the seeded host records (src/host/huabu.ts)
// point agents here. Held as Markdown text in this module, so the build carries them with the code and they
// are served from memory.

export interface HostSkill {
  name: string;
  title: string;
  /** One line for the index. */
  summary: string;
  markdown: string;
}

const HUABU_ACCESS = `# Huabu access

You work for one Huabu canvas. Everything you ask the host goes to its resource file system (RFS) at
\`$HUABU_RFS_URL\`, with your canvas token in every request:

\`\`\`sh
curl -fsS -H "Authorization: Bearer $AGENTLET_TOKEN" "$HUABU_RFS_URL/resources"
\`\`\`

The token, and the resource grant below, are already in your environment. Never print them, write them to
a file, put them in a prompt or pass them to another program than the request itself.

## The catalogue: what you may use

- \`GET $HUABU_RFS_URL/resources\` lists the records you may read about: the host's and those of the machine
  you run on, sorted by \`id\`. Add \`?schemaVersion=2\` to read them as record v2
  (\`{id, name, displayName?, provider, sourceContent, userContent}\`).
- \`GET $HUABU_RFS_URL/resources/<id>\` reads one of them.
- Call a resource by \`displayName\` when it has one, else by \`name\`. Follow its \`sourceContent\` (or v1
  \`instructions\`), then its \`userContent\`: those are the owner's instructions and they come last.
- A record tells you what a resource is and how to use it. It does not grant you the right to use it.
- The answers carry an \`ETag\`: send it back as \`If-None-Match\` and a \`304\` means nothing changed.

## Hosted capabilities: invoking with your grant

Some records are capabilities the host runs for you (web search, image generation, ...), with credentials
only the host holds. Your thread's grant lets you invoke those your profile selected:

\`\`\`sh
curl -fsS -X POST "$HUABU_RFS_URL/resources/<id>/invoke" \\
  -H "Authorization: Bearer $AGENTLET_TOKEN" \\
  -H "X-Huabu-Resource-Grant: $HUABU_RESOURCE_GRANT" \\
  -H "X-Huabu-Thread-Id: $HUABU_THREAD_ID" \\
  -H "Content-Type: application/json" \\
  -d '{"schemaVersion":1,"input":{...}}'
\`\`\`

- The record of the capability says what \`input\` it takes.
- Add \`"correlationId":"<your label>"\` beside \`input\` to find the call again: it comes back in the
  answer \`{"schemaVersion":1,"resourceId":"<id>","result":...,"correlationId":"<your label>"}\`.
- \`403 forbidden\` with \`details.reason\` \`grant_expired\` or \`grant_invalid\` means your grant no longer
  holds: stop and tell the owner; do not retry. Other \`403\` reasons mean this thread may not use that
  resource.
- \`429 quota_exceeded\` means wait as long as \`Retry-After\` says; \`504 timeout\` and
  \`502 provider_failure\` mean the capability failed this time.

## Other agents' profiles

\`GET $HUABU_RFS_URL/agent/profiles\` answers \`{profiles: [{id, alias, default?}]}\`: the agent profiles
that can be started on your machine; \`default: true\` marks the one to use when nobody named one.

## What is installed on your machine

Skills, tools and connectors installed on your machine live under \`$AGENT_RESOURCE_DIR\`. A skill \`<id>\` from
your machine is the folder \`$AGENT_RESOURCE_DIR/skills/<id>/\`: its \`SKILL.md\` (the record's
\`sourceContent\`), and its \`scripts/\`, \`references/\` and \`assets/\` when it has them; run its scripts from
there. Before you install, change or remove anything there, read \`$HUABU_RFS_URL/skill/local-resource-management\`.

## When a request fails

Every error answers \`{statusCode, code, error, message, details?}\`. Read \`code\`: it is stable.
\`GET $HUABU_RFS_URL/skill\` lists the guides of this host.
`;

const LOCAL_RESOURCE_MANAGEMENT = `# Local resource management

Skills, tools and connectors installed on the machine you run on live under \`$AGENT_RESOURCE_DIR\`:

\`\`\`text
$AGENT_RESOURCE_DIR/
  skills/       one directory per skill
  tools/
  connectors/
  receipts/     one <id>.json per installed resource
\`\`\`

Each installed resource has a receipt naming its entrypoint relative to \`$AGENT_RESOURCE_DIR\`. The host's
catalogue (\`GET $HUABU_RFS_URL/resources\`, see \`$HUABU_RFS_URL/skill/huabu-access\`) tells you which of them
you may use.

## Before you change anything

1. Install, change or remove a local resource only when the owner asked you to, and say what you will do
   first: what you install, where it comes from, and which files you will write.
2. Write only under \`$AGENT_RESOURCE_DIR\`: \`skills/<id>/\`, \`tools/<id>/\` or \`connectors/<id>/\`. No
   symbolic link out of it, no \`..\` in a path.
3. Check the entrypoint exists and does what the owner expects before you record it.
4. Never put a token, key or password in a file under \`$AGENT_RESOURCE_DIR\` or in a receipt.

## Recording an install

Tell the host what you installed, so every agent on this machine finds it in the catalogue:

\`\`\`sh
curl -fsS -X POST "$HUABU_RFS_URL/resources/local/receipts" \\
  -H "Authorization: Bearer $AGENTLET_TOKEN" \\
  -H "Content-Type: application/json" \\
  -d '{"id":"pdf-grep","kind":"tool","name":"PDF grep",
       "sourceContent":"Searches text in PDF files.\\n\\nRun $AGENT_RESOURCE_DIR/tools/pdf-grep/pdf-grep.sh PATTERN FILE.",
       "entrypoint":"tools/pdf-grep/pdf-grep.sh",
       "source":"https://example.org/pdf-grep"}'
\`\`\`

- \`id\`: kebab-case (\`a-z\`, \`0-9\`, single hyphens), at most 128 characters; the directory's name.
- \`kind\`: \`skill\`, \`tool\` or \`connector\`.
- \`name\`: what agents call it. \`sourceContent\`: how an agent uses it; name paths with
  \`$AGENT_RESOURCE_DIR\`, never your own home directory.
- \`entrypoint\`: relative to \`$AGENT_RESOURCE_DIR\`. \`source\` (optional): where it came from.

The answer is \`{resource}\`: the catalogue record, with your machine as its \`provider\`. Recording the same
\`id\` again replaces it. An \`id\` of the host or of another machine is refused (\`403\` or \`409\`): choose
another. Text that looks like a secret is refused with \`422 secret_detected\`: remove it.
\`409 record_quota_exceeded\` means your machine holds as many records (or as much text) as it may:
remove records of installs that are gone, or tell the owner; do not retry as it is.

## Removing an install

Remove the files first, then the record:

\`\`\`sh
curl -fsS -X DELETE "$HUABU_RFS_URL/resources/local/receipts/pdf-grep" \\
  -H "Authorization: Bearer $AGENTLET_TOKEN"
\`\`\`

The answer is \`{removed: true}\`, or \`{removed: false}\` when your machine held no such record.
`;

export const HOST_SKILLS: readonly HostSkill[] = [
  {
    name: 'huabu-access',
    title: 'Huabu access',
    summary: 'How to read the catalogue, invoke hosted capabilities with your grant, and list agent profiles.',
    markdown: HUABU_ACCESS,
  },
  {
    name: 'local-resource-management',
    title: 'Local resource management',
    summary: 'How to install, record and remove skills, tools and connectors on your machine.',
    markdown: LOCAL_RESOURCE_MANAGEMENT,
  },
];

/** `GET $HUABU_RFS_URL/skill`: the index of the host skills. */
export const SKILL_INDEX = [
  '# Guides of this Huabu host',
  '',
  'Read a guide with `curl -fsS -H "Authorization: Bearer $AGENTLET_TOKEN" "$HUABU_RFS_URL/skill/<name>"`. Start with `huabu-access`.',
  '',
  ...HOST_SKILLS.map((s) => `- \`${s.name}\`: ${s.title}. ${s.summary}`),
  '',
].join('\n');

export function hostSkill(name: string): HostSkill | undefined {
  return HOST_SKILLS.find((s) => s.name === name);
}
