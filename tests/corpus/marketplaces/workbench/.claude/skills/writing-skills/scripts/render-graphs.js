// Render the ```dot blocks of a SKILL.md to SVG files next to it, with Graphviz.
//
//   node scripts/render-graphs.js path/to/SKILL.md
//
// Needs the `dot` command (apt-get install graphviz / brew install graphviz).

"use strict";
const fs = require("fs");
const path = require("path");
const { execFileSync } = require("child_process");

const file = process.argv[2];
if (!file) {
  console.error("usage: render-graphs.js SKILL.md");
  process.exit(2);
}
const text = fs.readFileSync(file, "utf8");
const blocks = [...text.matchAll(/^```dot\n([\s\S]*?)^```/gm)].map((m) => m[1]);
if (blocks.length === 0) {
  console.log(`no dot blocks in ${file}`);
  process.exit(0);
}
blocks.forEach((src, i) => {
  const out = path.join(path.dirname(file), `graph-${i + 1}.svg`);
  const svg = execFileSync("dot", ["-Tsvg"], { input: src });
  fs.writeFileSync(out, svg);
  console.log(`wrote ${out}`);
});
