// dump_real_tools.mjs lists the tools of the real MCP servers the project
// tests against (the versions pinned in the repository's package.json) and
// prints them as JSON; its output is real_tools.json.
//
// Run it outside the repository, in a scratch directory:
//
//	mkdir /tmp/tok && cd /tmp/tok && npm init -y
//	npm install @modelcontextprotocol/server-everything@2026.8.31 \
//	    @modelcontextprotocol/server-filesystem@2026.8.31
//	node /path/to/toolsearch/testdata/dump_real_tools.mjs > real_tools.json
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const servers = {
  everything: ["node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"],
  filesystem: ["node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", "/tmp"],
};
const out = [];
for (const [name, args] of Object.entries(servers)) {
  const c = new Client({ name: "dump", version: "0" });
  await c.connect(new StdioClientTransport({ command: "node", args, stderr: "ignore" }));
  const r = await c.listTools();
  for (const t of r.tools) out.push({ server: name, name: t.name, title: t.title, description: t.description, inputSchema: t.inputSchema });
  await c.close();
}
console.log(JSON.stringify(out, null, 1));
