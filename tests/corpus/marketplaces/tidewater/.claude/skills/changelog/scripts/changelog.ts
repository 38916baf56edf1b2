// Conventional commits -> a CHANGELOG section.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { GROUPS, OTHER } from "./groups.ts";

const { values } = parseArgs({
  options: {
    from: { type: "string" },
    version: { type: "string" },
    all: { type: "boolean", default: false },
  },
});
if (!values.version) {
  console.error("changelog: --version is required");
  process.exit(2);
}
const text = readFileSync(values.from ?? 0, "utf8");
const RX = /^(\w+)(?:\(([^)]+)\))?!?:\s*(.+)$/;
const out = new Map<string, string[]>();
for (const line of text.split("\n").filter(Boolean)) {
  const m = RX.exec(line);
  if (!m) continue;
  const [, type, scope, subject] = m;
  const group = GROUPS[type] ?? (values.all ? OTHER : undefined);
  if (!group) continue;
  out.set(group, [...(out.get(group) ?? []), scope ? `**${scope}:** ${subject}` : subject]);
}
console.log(`## ${values.version}\n`);
for (const g of [...Object.values(GROUPS), OTHER]) {
  if (!out.has(g)) continue;
  console.log(`### ${g}\n`);
  for (const item of out.get(g)!) console.log(`- ${item}`);
  console.log();
}
