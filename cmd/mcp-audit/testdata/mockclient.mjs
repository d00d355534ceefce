// A client this project did not write, the MCP TypeScript SDK's, against
// `mcp-audit mock`: over stdio (argv: "stdio" COMMAND ARGS...) or
// streamable HTTP (argv: "http" URL). It prints what it saw as JSON.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, ...rest] = process.argv.slice(2);
const transport = mode === "http"
  ? new StreamableHTTPClientTransport(new URL(rest[0]))
  : new StdioClientTransport({ command: rest[0], args: rest.slice(1), env: process.env });
const client = new Client({ name: "ts-sdk-client", version: "1.0.0" });
await client.connect(transport);
const out = {
  serverInfo: client.getServerVersion(),
  instructions: client.getInstructions(),
  tools: (await client.listTools()).tools,
  resources: (await client.listResources()).resources,
  templates: (await client.listResourceTemplates()).resourceTemplates,
  prompts: (await client.listPrompts()).prompts,
  recorded: await client.callTool({ name: "lookup", arguments: { n: 1, q: "moon" } }),
  unrecorded: await client.callTool({ name: "lookup", arguments: { q: "sun" } }),
};
await client.close();
process.stdout.write(JSON.stringify(out));
