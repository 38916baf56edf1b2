// Seeded color palettes for generative pieces: the same seed always gives the same colors,
// so a piece can be reproduced exactly.
//
//   node scripts/palette.js --seed 42 --count 5 [--mode analogous|complementary|triad]

"use strict";

function mulberry32(seed) {
  return function () {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function hslToHex(h, s, l) {
  const a = s * Math.min(l, 1 - l);
  const f = (n) => {
    const k = (n + h / 30) % 12;
    const c = l - a * Math.max(Math.min(k - 3, 9 - k, 1), -1);
    return Math.round(255 * c).toString(16).padStart(2, "0");
  };
  return `#${f(0)}${f(8)}${f(4)}`.toUpperCase();
}

function parseArgs(argv) {
  const args = { seed: 1, count: 5, mode: "analogous" };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, "");
    if (!(key in args) || argv[i + 1] === undefined) {
      console.error(`usage: palette.js --seed N --count N --mode analogous|complementary|triad`);
      process.exit(2);
    }
    args[key] = key === "mode" ? argv[i + 1] : Number(argv[i + 1]);
  }
  return args;
}

const { seed, count, mode } = parseArgs(process.argv.slice(2));
const offsets = { analogous: [0, 30, -30], complementary: [0, 180], triad: [0, 120, 240] }[mode];
if (!offsets) {
  console.error(`unknown mode ${mode}`);
  process.exit(2);
}
const rand = mulberry32(seed);
const base = rand() * 360;
const colors = [];
for (let i = 0; i < count; i++) {
  const hue = (base + offsets[i % offsets.length] + (rand() - 0.5) * 12 + 360) % 360;
  colors.push(hslToHex(hue, 0.45 + rand() * 0.35, 0.3 + rand() * 0.45));
}
console.log(colors.join(" "));
