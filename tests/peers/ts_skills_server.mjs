// A stdio MCP server on the official TypeScript SDK v2 (@modelcontextprotocol/server 2.4, in
// .ci/peers) that serves the skills of a folder through the SDK's own Skills extension
// (SEP-2640): `skills/list`, `skills/get`, `resources/directory/read` and the skill files as
// resources, from `loadSkills(FOLDER)`.
//
// Usage: node ts_skills_server.mjs NODE_MODULES FOLDER
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';

const [modules, folder] = process.argv.slice(2);
if (!modules || !folder) {
  console.error('usage: node ts_skills_server.mjs NODE_MODULES FOLDER');
  process.exit(2);
}
const server = (path) =>
  import(pathToFileURL(join(modules, '@modelcontextprotocol/server/dist', path)).href);
const { McpServer } = await server('index.mjs');
const { StdioServerTransport } = await server('stdio.mjs');
const { loadSkills } = await server('ext/skills/node.mjs');

const skills = await loadSkills(folder, { strict: true });
const mcp = new McpServer({ name: 'ts-skills', version: '1.0.0' });
skills.attach(mcp);
await mcp.connect(new StdioServerTransport());
