// count_tokens.mjs writes tokens.json: the real token count of every tool of
// corpus.json and real_tools.json under the cl100k_base and o200k_base
// encodings, the reference the estimate of toolsearch.EstimateTokens is
// tested against.
//
// The counted text is what EstimateTokens estimates: the tool name, a
// newline, the description, a newline, and the input schema as compact JSON.
//
// Run it outside the repository, in a scratch directory:
//
//	mkdir /tmp/tok && cd /tmp/tok && npm init -y && npm install gpt-tokenizer@4.0.0
//	node /path/to/toolsearch/testdata/count_tokens.mjs
//
// (node resolves gpt-tokenizer from the working directory via NODE_PATH
// below, so the repository needs no node_modules of its own for this.)
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const require = createRequire(join(process.cwd(), "noop.js"));
const cl100k = require("gpt-tokenizer/cjs/encoding/cl100k_base");
const o200k = require("gpt-tokenizer/cjs/encoding/o200k_base");
const version = require("gpt-tokenizer/package.json").version;

const dir = new URL(".", import.meta.url);
const read = (f) => JSON.parse(readFileSync(new URL(f, dir), "utf8"));

const out = { tokenizer: `gpt-tokenizer ${version}`, text: "name + \"\\n\" + description + \"\\n\" + compact JSON of inputSchema", tools: [] };
for (const file of ["corpus.json", "real_tools.json"]) {
  for (const t of read(file)) {
    const text = t.name + "\n" + (t.description ?? "") + "\n" + (t.inputSchema ? JSON.stringify(t.inputSchema) : "");
    out.tools.push({ file, server: t.server, name: t.name, chars: [...text].length, cl100k_base: cl100k.countTokens(text), o200k_base: o200k.countTokens(text) });
  }
}
writeFileSync(new URL("tokens.json", dir), JSON.stringify(out, null, 1) + "\n");
console.log(`${out.tools.length} tools counted with ${out.tokenizer}`);
