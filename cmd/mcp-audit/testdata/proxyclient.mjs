// The MCP TypeScript SDK's client, a client this project did not write,
// against `mcp-audit proxy` (argv: COMMAND ARGS...): it lists the tools,
// calls echo and pid, and prints what it saw as JSON.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [command, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({ command, args, env: process.env });
const client = new Client({ name: "ts-sdk-client", version: "1.0.0" });
await client.connect(transport);
const out = {
  serverInfo: client.getServerVersion(),
  capabilities: client.getServerCapabilities(),
  tools: (await client.listTools()).tools.map((t) => t.name),
  echo: await client.callTool({ name: "echo", arguments: { text: "from ts" } }),
  pid: await client.callTool({ name: "pid", arguments: {} }),
};
await client.close();
process.stdout.write(JSON.stringify(out));
