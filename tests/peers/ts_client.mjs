// A client on the official TypeScript SDK (@modelcontextprotocol/sdk, in .ci/peers): lists the
// tools of a server, calls `echo`, then the conformance fixture's `test_sampling` and
// `test_elicitation`, answering the sampling and the elicitation, and prints what it saw as
// one JSON document.
//
// Usage: node ts_client.mjs NODE_MODULES [--no-input] (URL | COMMAND ARGS...); with
// `--no-input` the two tools that ask the client for input are not called (for a server that
// does not forward such requests, like `switchboard serve`).
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';

const [modules, ...rest] = process.argv.slice(2);
const withInput = rest[0] !== '--no-input';
const [target, ...args] = withInput ? rest : rest.slice(1);
const sdk = (path) => import(pathToFileURL(join(modules, '@modelcontextprotocol/sdk/dist/esm', path)).href);
const { Client } = await sdk('client/index.js');
const { StdioClientTransport } = await sdk('client/stdio.js');
const { StreamableHTTPClientTransport } = await sdk('client/streamableHttp.js');
const { CreateMessageRequestSchema, ElicitRequestSchema } = await sdk('types.js');

const client = new Client(
  { name: 'switchboard-interop', version: '1.0.0' },
  { capabilities: { sampling: {}, elicitation: {} } }
);
client.setRequestHandler(CreateMessageRequestSchema, async () => ({
  role: 'assistant',
  content: { type: 'text', text: 'sampled by typescript' },
  model: 'typescript-model'
}));
client.setRequestHandler(ElicitRequestSchema, async () => ({
  action: 'accept',
  content: { response: 'answered by typescript' }
}));
const transport = target.startsWith('http')
  ? new StreamableHTTPClientTransport(new URL(target))
  : new StdioClientTransport({ command: target, args });
await client.connect(transport);
const text = (result) => result.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
const tools = await client.listTools();
const seen = { tools: tools.tools.map((t) => t.name) };
seen.echo = text(await client.callTool({ name: 'echo', arguments: { text: 'hi' } }));
seen.simple = text(await client.callTool({ name: 'test_simple_text', arguments: {} }));
if (withInput) {
  seen.sampling = text(await client.callTool({ name: 'test_sampling', arguments: { prompt: 'p' } }));
  seen.elicitation = text(await client.callTool({ name: 'test_elicitation', arguments: { message: 'm' } }));
}
if (transport.terminateSession) await transport.terminateSession();
await client.close();
console.log(JSON.stringify(seen));
