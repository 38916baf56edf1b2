#!/usr/bin/env node
// to_srt.mjs <transcript.json> [--max-chars N] [--format srt|vtt]
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { segment } from "./lib/segment.mjs";
import { srtTime, vttTime } from "./lib/timecode.mjs";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    "max-chars": { type: "string", default: "32" },
    format: { type: "string", default: "srt" },
  },
});
if (positionals.length !== 1 || !["srt", "vtt"].includes(values.format)) {
  console.error("usage: to_srt.mjs <transcript.json> [--max-chars N] [--format srt|vtt]");
  process.exit(2);
}
const transcript = JSON.parse(readFileSync(positionals[0], "utf8"));
const words = transcript.words ?? (transcript.segments ?? []).flatMap((s) => s.words ?? []);
if (!words.length) {
  console.error(`to_srt.mjs: no word timestamps in ${positionals[0]}`);
  process.exit(1);
}
const captions = segment(words, { maxChars: Number(values["max-chars"]) });
if (values.format === "vtt") {
  console.log("WEBVTT\n");
  for (const c of captions) console.log(`${vttTime(c.start)} --> ${vttTime(c.end)}\n${c.text}\n`);
} else {
  captions.forEach((c, i) => {
    console.log(`${i + 1}\n${srtTime(c.start)} --> ${srtTime(c.end)}\n${c.text}\n`);
  });
}
