#!/usr/bin/env node
// audit_assets.mjs [--max-kb N] [--json]: oversized, unreferenced and missing assets of the
// site whose package.json is in the current folder.
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { extname, join, relative } from "node:path";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: { "max-kb": { type: "string" }, json: { type: "boolean", default: false } },
});
const root = process.cwd();
if (!existsSync(join(root, "package.json"))) {
  console.error(`audit_assets.mjs: no package.json in ${root}; run it from the root of your ` +
    "site's repository");
  process.exit(1);
}
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const publicDir = join(root, pkg.reelhouse?.publicDir ?? "public");
if (!existsSync(publicDir)) {
  console.error(`audit_assets.mjs: the public folder ${relative(root, publicDir)}/ does not exist`);
  process.exit(1);
}

const MEDIA = new Set([".png", ".jpg", ".jpeg", ".webp", ".gif", ".svg", ".mp4", ".webm", ".vtt"]);
const TEXT = new Set([".html", ".css", ".md", ".njk", ".liquid"]);

function walk(dir, out = []) {
  for (const name of readdirSync(dir)) {
    if (name === "node_modules" || name.startsWith(".")) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else out.push(p);
  }
  return out;
}

const files = walk(root);
const media = files.filter((f) => f.startsWith(publicDir) && MEDIA.has(extname(f).toLowerCase()));
const text = files.filter((f) => TEXT.has(extname(f).toLowerCase())).map((f) => readFileSync(f, "utf8"));
const corpus = text.join("\n");
const budget = (f) =>
  Number(values["max-kb"] ?? ([".mp4", ".webm"].includes(extname(f)) ? 20000 : 500));

const report = { oversized: [], unreferenced: [], missing: [] };
for (const f of media) {
  const kb = Math.round(statSync(f).size / 1024);
  if (kb > budget(f)) report.oversized.push({ file: relative(root, f), kb });
  const name = relative(publicDir, f);
  if (!corpus.includes(name) && !corpus.includes(name.split("/").pop())) {
    report.unreferenced.push(relative(root, f));
  }
}
for (const m of corpus.matchAll(/(?:src|href)="\/([^"#?]+\.(?:png|jpe?g|webp|gif|svg|mp4|webm|vtt))"/g)) {
  if (!existsSync(join(publicDir, m[1]))) report.missing.push(m[1]);
}

if (values.json) {
  console.log(JSON.stringify(report, null, 2));
} else {
  for (const o of report.oversized) console.log(`oversized     ${o.file} (${o.kb} KB)`);
  for (const u of report.unreferenced) console.log(`unreferenced  ${u}`);
  for (const m of [...new Set(report.missing)]) console.log(`missing       ${m}`);
  const n = report.oversized.length + report.unreferenced.length + report.missing.length;
  console.log(n ? `${n} finding(s)` : "no findings");
}
