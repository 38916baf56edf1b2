// mediactl plan | status | ffmpeg
import { readFileSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { ASPECTS, missing, planShots, runningTime } from "./plan.mjs";

const USAGE = `usage: mediactl plan <brief.json> [--aspect 16:9|9:16|1:1] [--max-shot N] [--out FILE]
       mediactl status <plan.json> [--strict]
       mediactl ffmpeg <plan.json>`;

function fail(message, code = 2) {
  process.stderr.write(`mediactl: ${message}\n`);
  process.exit(code);
}

function readJson(path) {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    fail(`cannot read ${path}: ${err.message}`, 1);
  }
}

const [command, ...rest] = process.argv.slice(2);
let parsed;
try {
  parsed = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      aspect: { type: "string", default: "16:9" },
      "max-shot": { type: "string", default: "6" },
      out: { type: "string" },
      strict: { type: "boolean", default: false },
    },
  });
} catch (err) {
  fail(`${err.message}\n${USAGE}`);
}
const { values, positionals } = parsed;

if (command === "plan") {
  if (positionals.length !== 1) fail(USAGE);
  if (!(values.aspect in ASPECTS)) {
    fail(`--aspect must be one of ${Object.keys(ASPECTS).join(", ")}, not '${values.aspect}'`);
  }
  let plan;
  try {
    plan = planShots(readJson(positionals[0]), {
      aspect: values.aspect,
      maxShot: Number(values["max-shot"]),
    });
  } catch (err) {
    fail(`${positionals[0]}: ${err.message}`, 1);
  }
  const text = JSON.stringify(plan, null, 2) + "\n";
  if (values.out) {
    writeFileSync(values.out, text);
    console.log(`${plan.shots.length} shots, ${runningTime(plan)} s -> ${values.out}`);
  } else {
    process.stdout.write(text);
  }
} else if (command === "status") {
  if (positionals.length !== 1) fail(USAGE);
  const plan = readJson(positionals[0]);
  const todo = missing(plan);
  console.log(`${plan.title}: ${plan.shots.length} shots, ${runningTime(plan).toFixed(1)} s`);
  for (const shot of todo) console.log(`  no source: ${shot.id} "${shot.caption.slice(0, 40)}"`);
  console.log(todo.length ? `${todo.length} shot(s) not ready` : "every shot has a source");
  if (values.strict && todo.length) process.exit(1);
} else if (command === "ffmpeg") {
  if (positionals.length !== 1) fail(USAGE);
  const plan = readJson(positionals[0]);
  const todo = missing(plan);
  if (todo.length) fail(`${todo.length} shot(s) have no source; see mediactl status`, 1);
  const { width, height } = plan.size;
  const inputs = plan.shots.map((s) => `-t ${s.seconds} -i '${s.source}'`).join(" ");
  const scale = plan.shots
    .map((_, i) => `[${i}:v]scale=${width}:${height}:force_original_aspect_ratio=increase,crop=${width}:${height}[v${i}]`)
    .join(";");
  const concat = plan.shots.map((_, i) => `[v${i}]`).join("") + `concat=n=${plan.shots.length}:v=1[out]`;
  console.log(`ffmpeg ${inputs} -filter_complex '${scale};${concat}' -map '[out]' episode.mp4`);
} else {
  fail(USAGE);
}
