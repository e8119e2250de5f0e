// The durable bootstrap (`initialPreamble[0]`): it names every effective resource and tells the agent where
// to read their records, in runtime variables only: never a concrete URL or a token.

export function bootstrapPreamble(resourceIds: readonly string[]): string {
  const list = resourceIds.length > 0 ? resourceIds.map((id) => `- ${id}`).join('\n') : '- (none)';
  return [
    'Resources available to you in this thread (their records describe them; a record grants no right by itself):',
    list,
    'Read the record of each before you rely on it: `GET $HUABU_RFS_URL/resources` lists them and `GET $HUABU_RFS_URL/resources/<id>` returns one.',
    'Send `Authorization: Bearer $AGENTLET_TOKEN` with every request. Both variables are in your environment; never print, log or copy the token.',
  ].join('\n');
}
