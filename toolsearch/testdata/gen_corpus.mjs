// gen_corpus.mjs turns corpus.txt into corpus.json: node gen_corpus.mjs
//
// The schema style varies by server, as real servers differ: some emit
// zod-style schemas ($schema, additionalProperties), some pydantic-style
// ones (a title per property), some plain ones.
import { readFileSync, writeFileSync } from "node:fs";

const dir = new URL(".", import.meta.url);
const lines = readFileSync(new URL("corpus.txt", dir), "utf8").split("\n");

function titleCase(s) {
  return s.replace(/([a-z])([A-Z])/g, "$1 $2").split(/[_\-\s]+/).filter(Boolean)
    .map((w) => w[0].toUpperCase() + w.slice(1)).join(" ");
}

function typeSchema(type) {
  if (type.endsWith("[]")) {
    const inner = type.slice(0, -2);
    return { type: "array", items: typeSchema(inner) };
  }
  if (type.includes("|")) return { type: "string", enum: type.split("|") };
  if (type === "object") return { type: "object" };
  if (type === "array") return { type: "array", items: {} };
  return { type };
}

// parseParam reads "name[:type][!] description" (the ! may also precede the
// colon: "name!:type").
function parseParam(text) {
  const m = text.match(/^([A-Za-z0-9_.$-]+?)(!?)(?::([^\s!]+))?(!?)(?:\s+(.*))?$/);
  if (!m) throw new Error("bad param line: " + text);
  return { name: m[1], required: m[2] === "!" || m[4] === "!", type: m[3] || "string", description: m[5] || "" };
}

function property(p, style) {
  const s = typeSchema(p.type);
  const out = {};
  if (style === "pydantic") out.title = titleCase(p.name);
  Object.assign(out, s);
  if (p.description) out.description = p.description;
  return out;
}

function objectSchema(params, style, top, toolName) {
  const schema = { type: "object", properties: {} };
  const required = [];
  for (const p of params) {
    const prop = property(p, style);
    if (p.children.length) {
      const target = prop.type === "array" ? (prop.items = { type: "object" }) : prop;
      const child = objectSchema(p.children, style, false);
      target.properties = child.properties;
      if (child.required) target.required = child.required;
      if (style === "zod") target.additionalProperties = false;
    }
    schema.properties[p.name] = prop;
    if (p.required) required.push(p.name);
  }
  if (required.length) schema.required = required;
  if (top && style === "zod") {
    schema.additionalProperties = false;
    schema.$schema = "http://json-schema.org/draft-07/schema#";
  }
  if (top && style === "pydantic") schema.title = titleCase(toolName).replace(/ /g, "") + "Arguments";
  return schema;
}

const styles = ["zod", "plain", "pydantic"];
const tools = [];
let server = null, serverIndex = -1, tool = null, last = null;
const flush = () => {
  if (!tool) return;
  const style = styles[serverIndex % styles.length];
  const t = { server, name: tool.name };
  if (tool.title) t.title = tool.title;
  t.description = tool.description;
  t.inputSchema = objectSchema(tool.params, style, true, tool.name);
  tools.push(t);
  tool = null;
};
for (const raw of lines) {
  if (raw.startsWith("#") || raw.trim() === "") continue;
  if (raw.startsWith("server ")) { flush(); server = raw.slice(7).trim(); serverIndex++; continue; }
  if (raw.startsWith("tool ")) {
    flush();
    const m = raw.slice(5).match(/^(\S+)\s*\|\s*(.*?)\s*\|\s*(.*)$/);
    if (!m) throw new Error("bad tool line: " + raw);
    tool = { name: m[1], title: m[2], description: m[3].trim(), params: [] };
    continue;
  }
  if (raw.startsWith("    .")) { last.children.push({ ...parseParam(raw.slice(5)), children: [] }); continue; }
  if (raw.startsWith("  ")) { last = { ...parseParam(raw.trim()), children: [] }; tool.params.push(last); continue; }
  throw new Error("bad line: " + raw);
}
flush();
writeFileSync(new URL("corpus.json", dir), JSON.stringify(tools, null, 1) + "\n");
console.log(`${tools.length} tools`);
