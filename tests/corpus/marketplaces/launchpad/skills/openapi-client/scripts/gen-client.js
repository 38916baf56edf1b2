#!/usr/bin/env node
// Generate a fetch client (CommonJS) from an OpenAPI 3 document.
"use strict";
const fs = require("fs");

function operations(doc) {
  const out = [];
  for (const [path, item] of Object.entries(doc.paths || {})) {
    for (const [method, op] of Object.entries(item)) {
      if (!["get", "post", "put", "patch", "delete"].includes(method)) continue;
      const name = op.operationId ||
        `${method}_${path.replace(/[{}]/g, "").split("/").filter(Boolean).join("_")}`;
      out.push({ name, method: method.toUpperCase(), path, op });
    }
  }
  return out;
}

function render(doc, ops) {
  const base = (doc.servers && doc.servers[0] && doc.servers[0].url) || "";
  const lines = [`// Generated from ${doc.info.title} ${doc.info.version}`, `"use strict";`,
    `const DEFAULT_BASE = ${JSON.stringify(base)};`];
  for (const { name, method, path, op } of ops) {
    const pathParams = (op.parameters || []).filter(p => p.in === "path").map(p => p.name);
    const url = path.replace(/{(\w+)}/g, (_, p) => "${encodeURIComponent(params." + p + ")}");
    lines.push(`async function ${name}(params = {}, { baseUrl = DEFAULT_BASE, fetch = globalThis.fetch } = {}) {`,
      `  const rest = { ...params };`,
      ...pathParams.map(p => `  delete rest.${p};`),
      method === "GET"
        ? `  const q = new URLSearchParams(rest).toString();\n  const res = await fetch(\`\${baseUrl}${url}\${q ? "?" + q : ""}\`);`
        : `  const res = await fetch(\`\${baseUrl}${url}\`, { method: "${method}", headers: { "content-type": "application/json" }, body: JSON.stringify(rest) });`,
      `  if (!res.ok) throw new Error(\`${name}: HTTP \${res.status}\`);`,
      `  return res.json();`, `}`);
  }
  lines.push(`module.exports = { ${ops.map(o => o.name).join(", ")} };`);
  return lines.join("\n") + "\n";
}

function main(argv) {
  const file = argv.find(a => !a.startsWith("--"));
  if (!file) {
    console.error("usage: gen-client.js <openapi.json> [--list]");
    process.exit(2);
  }
  const doc = JSON.parse(fs.readFileSync(file, "utf8"));
  const ops = operations(doc);
  if (argv.includes("--list")) {
    for (const o of ops) console.log(`${o.method.padEnd(6)} ${o.path.padEnd(16)} ${o.name}`);
    return;
  }
  process.stdout.write(render(doc, ops));
}

main(process.argv.slice(2));
