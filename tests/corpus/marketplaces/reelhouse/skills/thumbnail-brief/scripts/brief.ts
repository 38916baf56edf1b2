// brief.ts <plan.json> [--platform youtube|shorts|podcast]: a thumbnail brief in Markdown.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { bestPair, contrast } from "./palette";

const SIZES: Record<string, string> = {
  youtube: "1280x720",
  shorts: "1080x1920",
  podcast: "3000x3000",
};

type Shot = { id: string; seconds: number; caption: string; hero?: boolean };

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { platform: { type: "string", default: "youtube" } },
});
const platform = values.platform as string;
if (positionals.length !== 1 || !(platform in SIZES)) {
  console.error("usage: brief.ts <plan.json> [--platform youtube|shorts|podcast]");
  process.exit(2);
}
const plan = JSON.parse(readFileSync(positionals[0], "utf8")) as { title: string; shots: Shot[] };
const hero = plan.shots.find((s) => s.hero) ??
  [...plan.shots].sort((a, b) => b.seconds - a.seconds)[0];
const headline = plan.title.split(/\s+/).slice(0, 5).join(" ").toUpperCase();
const [bg, fg] = bestPair();

console.log(`# Thumbnail: ${plan.title}\n`);
console.log(`- size: ${SIZES[platform]} (${platform})`);
console.log(`- frame: shot ${hero.id}, "${hero.caption}"`);
console.log(`- headline: ${headline}`);
console.log(`- colors: ${fg.name} ${fg.hex} on ${bg.name} ${bg.hex} ` +
  `(contrast ${contrast(bg.hex, fg.hex).toFixed(1)}:1)`);
